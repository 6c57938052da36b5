# Stan NUTS (rstan) and JAGS (rjags with the glm module) on the paper's examples, timed by their
# samplers: 4 chains of 1000 warmup + 1000 draws, counted as run two at a time on 2 cores.
#
#   Rscript bench/peers/run_peers.R OUT.tsv U:examples/paper/unimodal_d10.csv M:examples/paper/multimodal.csv ...
#
# U: columns x[1..d] and y in {-1,+1}, bias 0.5, prior N(0, 10^2)  (examples/paper/unimodal_d*.vbn)
# M: columns o and y, hidden h with P(h=+1) = 0.6, bias 2, prior N(3, 10)  (examples/paper/multimodal.vbn)
#
# Every example runs two programs per peer: row by row (U.stan, M.stan, U.jags, M.jags, the
# last sampling h per row) and over the distinct rows with their counts (Uc.stan, Mc.stan,
# Uc.jags, Mc.jags, the last two with h summed out), as an expert would write them.
#
# Time: the sampler's own, for 2 cores. Stan's is the sum over chains of get_elapsed_time()
# (warmup + sampling) divided by 2; JAGS's the sum over chains of the time from jags.model()
# (which adapts) to the last draw, divided by 2. The whole sampling() call, Stan's one-off
# compilation and R's start-up (with the packages loaded) are written beside it, not in the
# ratio. Metric: the smallest over the weights of min(bulk-ESS, tail-ESS) (R's posterior).
#
# Writes a header and one row per (example, peer, program, seed) to OUT.tsv (columns below); the
# means and sds of the weights are comma-separated lists. Needs Debian's r-base-core
# r-cran-rstan r-cran-posterior, and jags r-cran-rjags for JAGS. PEERS_SKIP_JAGS=1 runs Stan
# alone, PEERS_SKIP_STAN=1 JAGS alone.
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
args <- commandArgs(TRUE); out <- args[1]; cases <- args[-1]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
COLUMNS <- c("example", "peer", "program", "rows", "seed", "sampler_s", "call_s", "compile_s", "ess_bulk",
             "ess_tail", "ess", "ess_per_s", "rhat", "mean", "sd")
cat(paste(COLUMNS, collapse = "\t"), "\n", sep = "", file = out)
cat(sprintf("# R start-up with rstan, posterior%s loaded: %.2f s\n", if (has_jags) ", rjags" else "", r_start))

# Compiled programs are kept in PEERS_CACHE (default: R's user cache folder), keyed by the
# program's text and rstan's version, with the time their compilation took.
cache <- Sys.getenv("PEERS_CACHE", tools::R_user_dir("vbn-bench", "cache"))
compiled <- list(); compile_s <- list()
stan_for <- function(program) {
  if (is.null(compiled[[program]])) {
    path <- file.path(here, paste0(program, ".stan"))
    key <- paste(tools::md5sum(path), packageVersion("rstan"), sep = "-")
    rds <- file.path(cache, paste0(program, "-", key, ".rds"))
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

# One TSV row: ESS = the smallest over the weights of min(bulk-ESS, tail-ESS).
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

# The data of a case, row by row and over distinct rows with counts.
case_data <- function(kind, df) {
  y01 <- as.integer((df$y + 1) / 2)
  if (kind == "U") {
    X <- as.matrix(df[, setdiff(names(df), "y"), drop = FALSE]); d <- ncol(X)
    key <- apply(X, 1, paste, collapse = ",")
    first <- !duplicated(key); Xc <- X[first, , drop = FALSE]
    n <- as.integer(table(key)[key[first]]); k <- as.integer(tapply(y01, key, sum)[key[first]])
    rows <- list(T = nrow(X), d = d, X = X, y01 = y01, alpha = 0.5)
    counts <- list(N = nrow(Xc), d = d, X = Xc, n = n, k = k, alpha = 0.5)
    list(d = d, stan_rows = c(rows, prior_sd = 10), stan_counts = c(counts, prior_sd = 10),
         jags_rows = c(rows, prior_prec = 0.01), jags_counts = c(counts, prior_prec = 0.01))
  } else {
    common <- list(alpha = 2, ph = 0.6, prior_mean = 3)
    key <- paste(df$o, df$y); first <- !duplicated(key)
    cnt <- as.numeric(table(key)[key[first]])
    os <- sort(unique(df$o))
    list(d = 2,
         stan_rows = c(list(T = nrow(df), o = df$o, y = df$y), common, prior_sd = sqrt(10)),
         stan_counts = c(list(N = sum(first), o = df$o[first], y = df$y[first], cnt = cnt), common,
                         prior_sd = sqrt(10)),
         jags_rows = c(list(T = nrow(df), o = df$o, y01 = y01), common, prior_prec = 0.1),
         jags_counts = c(list(N = length(os), o = os, n = sapply(os, function(v) sum(df$o == v)),
                              k = sapply(os, function(v) sum(y01[df$o == v]))), common, prior_prec = 0.1))
  }
}

run_stan <- function(example, program, data, d, seed) {
  m <- stan_for(program)
  set.seed(seed)
  inits <- lapply(1:4, function(ch) list(theta = array(runif(d, -2, 2))))
  t0 <- proc.time()[["elapsed"]]
  f <- sampling(m, data = data, chains = 4, cores = stan_cores, iter = 2000, warmup = 1000, seed = seed, refresh = 0,
                pars = "theta", init = inits)
  call_s <- proc.time()[["elapsed"]] - t0
  sampler_s <- sum(get_elapsed_time(f)) / 2
  dr <- as_draws_array(as.array(f))
  dr <- subset_draws(dr, variable = grep("^theta", variables(dr), value = TRUE))
  rows <- if (is.null(data$N)) data$T else data$N
  row(example, "stan", program, rows, seed, sampler_s, call_s, compile_s[[program]], dr)
}

run_jags <- function(example, program, data, d, seed) {
  one <- function(ch) {
    load.module("glm", quiet = TRUE)
    set.seed(1000 * seed + ch)
    t0 <- proc.time()[["elapsed"]]
    jm <- jags.model(file.path(here, paste0(program, ".jags")), data = data,
                     inits = list(theta = runif(d, -2, 2), .RNG.name = "base::Mersenne-Twister", .RNG.seed = 1000 * seed + ch),
                     n.chains = 1, n.adapt = 500, quiet = TRUE)
    update(jm, 500, progress.bar = "none")
    draws <- as.matrix(coda.samples(jm, "theta", 1000, progress.bar = "none")[[1]])
    list(draws = draws, secs = proc.time()[["elapsed"]] - t0)
  }
  t0 <- proc.time()[["elapsed"]]
  res <- parallel::mclapply(1:4, one, mc.cores = 2)   # one chain per process, two at a time
  call_s <- proc.time()[["elapsed"]] - t0
  sampler_s <- sum(sapply(res, `[[`, "secs")) / 2
  draws <- lapply(res, `[[`, "draws")
  arr <- aperm(array(unlist(draws), c(1000, ncol(draws[[1]]), 4)), c(1, 3, 2))
  dimnames(arr) <- list(NULL, NULL, colnames(draws[[1]]))
  rows <- if (is.null(data$N)) data$T else data$N
  row(example, "jags", program, rows, seed, sampler_s, call_s, 0, as_draws_array(arr))
}

for (case in cases) {
  kind <- sub(":.*", "", case); file <- sub("^[^:]*:", "", case)
  example <- sub("\\.csv$", "", basename(file))
  dat <- case_data(kind, read.csv(file, check.names = FALSE))
  # Where no row of U's data repeats, its programs over distinct rows have nothing to gain: Stan
  # runs only U.stan (bernoulli_logit_glm, faster than Uc.stan's binomial_logit at 1,000
  # distinct rows) and JAGS only Uc.jags (dbin with n = 1 is U.jags's dbern).
  repeats <- kind != "U" || dat$stan_counts$N < dat$stan_rows$T
  if (!skip_stan) for (seed in seq_len(stan_seeds)) {
    run_stan(example, kind, dat$stan_rows, dat$d, seed)
    if (repeats) run_stan(example, paste0(kind, "c"), dat$stan_counts, dat$d, seed)
  }
  if (has_jags) for (seed in seq_len(jags_seeds)) {
    if (repeats) run_jags(example, kind, dat$jags_rows, dat$d, seed)
    run_jags(example, paste0(kind, "c"), dat$jags_counts, dat$d, seed)
  }
}
