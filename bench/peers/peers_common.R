# What bench/peers/run_peers.R and run_corpus.R share: the packages, the settings from the
# environment, Stan's compiled programs (cached) and the TSV row every run writes. Sourced
# after the caller has set `here` (its own folder) and `out` (the TSV to write).
suppressPackageStartupMessages({ library(rstan); library(posterior) })
rstan_options(boost_lib = "/usr/include")   # Debian's Boost headers
has_jags <- suppressWarnings(requireNamespace("rjags", quietly = TRUE))
if (nzchar(Sys.getenv("PEERS_SKIP_JAGS"))) has_jags <- FALSE
if (has_jags) suppressPackageStartupMessages(library(rjags))
skip_stan <- nzchar(Sys.getenv("PEERS_SKIP_STAN"))
# Seeds 1..PEERS_SEEDS for Stan (default 20), 1..PEERS_JAGS_SEEDS for JAGS (default 5): the
# errors' RMSE over seeds is measured from them (JAGS takes up to a minute a run at 50 parents).
stan_seeds <- as.integer(Sys.getenv("PEERS_SEEDS", "20"))
# Stan's chains run one after another in this process unless PEERS_STAN_CORES=2: the time is
# the chains' own either way, and two workers take seconds to start at every call (18 s
# once on a busy machine), which would make a window of 240 calls hours long.
stan_cores <- as.integer(Sys.getenv("PEERS_STAN_CORES", "1"))
jags_seeds <- as.integer(Sys.getenv("PEERS_JAGS_SEEDS", "5"))
r_start <- proc.time()[["elapsed"]]          # R's start-up and the packages' loading
COLUMNS <- c("example", "peer", "program", "rows", "seed", "sampler_s", "call_s", "compile_s", "ess_bulk",
             "ess_tail", "ess", "ess_per_s", "rhat", "mean", "sd")
cat(paste(COLUMNS, collapse = "\t"), "\n", sep = "", file = out)
cat(sprintf("# R start-up with rstan, posterior%s loaded: %.2f s\n", if (has_jags) ", rjags" else "", r_start))

# Compiled programs are kept in PEERS_CACHE (default: R's user cache folder), keyed by the
# program's name, its text and rstan's version, with the time their compilation took.
cache <- Sys.getenv("PEERS_CACHE", tools::R_user_dir("vbn-bench", "cache"))
compiled <- list(); compile_s <- list()
stan_for <- function(program, path = file.path(here, paste0(program, ".stan"))) {
  if (is.null(compiled[[program]])) {
    key <- paste(tools::md5sum(path), packageVersion("rstan"), sep = "-")
    rds <- file.path(cache, paste0(gsub("/", "-", program), "-", key, ".rds"))
    if (file.exists(rds)) {
      kept <- readRDS(rds)
      cat(sprintf("# Stan's %s.stan from the cache (compiled in %.1f s)\n", program, kept$secs))
    } else {
      t0 <- proc.time()[["elapsed"]]
      kept <- list(model = stan_model(path), secs = proc.time()[["elapsed"]] - t0)
      cat(sprintf("# Stan compiled %s.stan in %.1f s\n", program, kept$secs))
      dir.create(cache, recursive = TRUE, showWarnings = FALSE)
      saveRDS(kept, rds)
    }
    compiled[[program]] <<- kept$model
    compile_s[[program]] <<- kept$secs
  }
  compiled[[program]]
}

# One TSV row: ESS = the smallest over the variables of min(bulk-ESS, tail-ESS).
row <- function(example, peer, program, rows, seed, sampler_s, call_s, compile, draws) {
  s <- summarise_draws(draws, "mean", "sd", default_convergence_measures())
  bulk <- min(s$ess_bulk); tail <- min(s$ess_tail); ess <- min(pmin(s$ess_bulk, s$ess_tail))
  line <- paste(c(example, peer, program, rows, seed, sprintf("%.4f", sampler_s), sprintf("%.3f", call_s),
                  sprintf("%.1f", compile), sprintf("%.1f", bulk), sprintf("%.1f", tail), sprintf("%.1f", ess),
                  sprintf("%.2f", ess / sampler_s), sprintf("%.4f", max(s$rhat)),
                  paste(sprintf("%.6g", s$mean), collapse = ","), paste(sprintf("%.6g", s$sd), collapse = ",")),
                collapse = "\t")
  cat(line, "\n", sep = "", file = out, append = TRUE)
  cat(line, "\n")
}
