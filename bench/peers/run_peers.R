# Stan NUTS (rstan) and JAGS (rjags with the glm module) on the paper's examples, measured the
# way bench/speed_table measures vbn: 4 chains of 1000 warmup + 1000 draws on 2 cores, wall time
# of the whole run (warmup and sampling; Stan's one-off compilation reported apart), smallest
# bulk-ESS over the weights (R's posterior package), and their ratio.
#
#   Rscript bench/peers/run_peers.R OUT.tsv U:examples/paper/unimodal_d10.csv M:examples/paper/multimodal.csv ...
#
# U: columns x[1..d] and y in {-1,+1}, bias 0.5, prior N(0, 10^2)  (examples/paper/unimodal_d*.vbn)
# M: columns o and y, hidden h with P(h=+1) = 0.6, bias 2, prior N(3, 10)  (examples/paper/multimodal.vbn)
# Each Stan model is compiled once per session. Writes one row per (example, peer) to OUT.tsv:
# example, peer, wall seconds, min bulk-ESS, ESS/s, max R-hat, then the posterior means.
# Needs Debian's r-base-core r-cran-rstan r-cran-posterior, and jags r-cran-rjags for JAGS.
suppressPackageStartupMessages({ library(rstan); library(posterior) })
rstan_options(boost_lib = "/usr/include")   # Debian's Boost headers
has_jags <- suppressWarnings(requireNamespace("rjags", quietly = TRUE))
# PEERS_SKIP_JAGS=1 runs Stan alone (JAGS takes minutes per example beyond 10 parents).
if (nzchar(Sys.getenv("PEERS_SKIP_JAGS"))) has_jags <- FALSE
if (has_jags) suppressPackageStartupMessages(library(rjags))
# PEERS_SKIP_STAN=1 runs JAGS alone (to re-time it without re-running Stan).
skip_stan <- nzchar(Sys.getenv("PEERS_SKIP_STAN"))
args <- commandArgs(TRUE); out <- args[1]; cases <- args[-1]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
compiled <- list()
stan_for <- function(kind) {
  if (is.null(compiled[[kind]])) {
    t0 <- proc.time()[["elapsed"]]
    compiled[[kind]] <<- stan_model(file.path(here, paste0(kind, ".stan")))
    cat(sprintf("# Stan compiled %s.stan in %.1f s\n", kind, proc.time()[["elapsed"]] - t0))
  }
  compiled[[kind]]
}
row <- function(example, peer, secs, draws) {
  s <- summarise_draws(draws, "mean", default_convergence_measures())
  ess <- min(s$ess_bulk)
  line <- paste(c(example, peer, sprintf("%.3f", secs), sprintf("%.1f", ess), sprintf("%.2f", ess / secs),
                  sprintf("%.4f", max(s$rhat)), sprintf("%.6g", s$mean)), collapse = "\t")
  cat(line, "\n", sep = "", file = out, append = TRUE)
  cat(line, "\n")
}
for (case in cases) {
  kind <- sub(":.*", "", case); file <- sub("^[^:]*:", "", case)
  example <- sub("\\.csv$", "", basename(file))
  df <- read.csv(file, check.names = FALSE)
  if (kind == "U") {
    X <- as.matrix(df[, setdiff(names(df), "y"), drop = FALSE]); d <- ncol(X); y01 <- as.integer((df$y + 1) / 2)
    sdat <- list(T = nrow(X), d = d, X = X, y01 = y01, alpha = 0.5, prior_sd = 10)
    jdat <- list(T = nrow(X), d = d, X = X, y01 = y01, alpha = 0.5, prior_prec = 0.01)
  } else {
    d <- 2
    sdat <- list(T = nrow(df), o = df$o, y = df$y, alpha = 2, ph = 0.6, prior_mean = 3, prior_sd = sqrt(10))
    jdat <- list(T = nrow(df), o = df$o, y01 = as.integer((df$y + 1) / 2), alpha = 2, ph = 0.6, prior_mean = 3,
                 prior_prec = 0.1)
  }
  inits <- function() list(theta = runif(d, -2, 2))
  if (!skip_stan) {
    m <- stan_for(kind)
    t0 <- proc.time()[["elapsed"]]
    f <- sampling(m, data = sdat, chains = 4, cores = 2, iter = 2000, warmup = 1000, seed = 1, refresh = 0,
                  pars = "theta")
    secs <- proc.time()[["elapsed"]] - t0
    dr <- as_draws_array(as.array(f))
    row(example, "stan_nuts", secs, subset_draws(dr, variable = grep("^theta", variables(dr), value = TRUE)))
  }
  if (!has_jags) next
  # JAGS: one chain per process, two processes at a time.
  one <- function(ch) {
    load.module("glm", quiet = TRUE)
    jm <- jags.model(file.path(here, paste0(kind, ".jags")), data = jdat,
                     inits = c(inits(), list(.RNG.name = "base::Mersenne-Twister", .RNG.seed = ch)),
                     n.chains = 1, n.adapt = 500, quiet = TRUE)
    update(jm, 500, progress.bar = "none")
    as.matrix(coda.samples(jm, "theta", 1000, progress.bar = "none")[[1]])
  }
  t0 <- proc.time()[["elapsed"]]
  res <- parallel::mclapply(1:4, one, mc.cores = 2)
  secs <- proc.time()[["elapsed"]] - t0
  arr <- aperm(array(unlist(res), c(1000, ncol(res[[1]]), 4)), c(1, 3, 2))
  dimnames(arr) <- list(NULL, NULL, colnames(res[[1]]))
  row(example, "jags", secs, as_draws_array(arr))
}
