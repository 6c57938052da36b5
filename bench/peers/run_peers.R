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
# Writes a header and one row per (example, peer, program, seed) to OUT.tsv (columns: peers_common.R); the
# means and sds of the weights are comma-separated lists. Needs Debian's r-base-core
# r-cran-rstan r-cran-posterior, and jags r-cran-rjags for JAGS. PEERS_SKIP_JAGS=1 runs Stan
# alone, PEERS_SKIP_STAN=1 JAGS alone.
args <- commandArgs(TRUE); out <- args[1]; cases <- args[-1]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
source(file.path(here, "peers_common.R"))

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
