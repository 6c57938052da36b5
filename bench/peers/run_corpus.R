# Stan NUTS (rstan) and JAGS (rjags) on the hidden-variable corpus, timed by their samplers as
# run_peers.R times them: 4 chains of 1000 warmup + 1000 draws, counted as run two at a time on
# 2 cores.
#
#   Rscript bench/peers/run_corpus.R OUT.tsv diagnosis survey occupancy sbn2:1 ...
#
# MODEL:K runs at most K seeds of each peer on MODEL (for the models whose runs take minutes).
#
# Each MODEL is tests/corpus/MODEL: data.csv, model.stan (the hidden values summed out by hand,
# over distinct rows with their counts) and model.jags (the hidden and missing values sampled
# per row, as JAGS is written). Where model.stan loops over rows and items, Stan also runs the
# program an expert would write for speed, corpus/*.stan (the same posterior, the items'
# log-likelihoods as matrix-vector products), and is scored by its faster program; there
# model.stan runs for the first seed only, to show the difference. As a careful
# user would, both peers start every chain at the
# major mode: the best of 8 optimizing() runs from random starts (make_reference.R's rule).
# That search is timed and written to the log, not counted in the sampler's time.
#
# The figures are over the reference's quantities (tests/corpus/quantities.R): the parameters
# themselves, or where a hidden node's sign or order is arbitrary, functions that do not depend
# on it (|w|, the row sums of |W|), so that a chain that changes labeling is not an error. ESS
# and R-hat are those of the quantities. Columns and settings (PEERS_SEEDS, PEERS_JAGS_SEEDS,
# PEERS_SKIP_STAN, PEERS_SKIP_JAGS): peers_common.R.
args <- commandArgs(TRUE); out <- args[1]; models <- args[-1]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
source(file.path(here, "peers_common.R"))
corpus <- file.path(here, "..", "..", "tests", "corpus")
source(file.path(corpus, "quantities.R"))
source(file.path(corpus, "corpus_data.R"))

# The major mode: the highest of 8 optimizing() runs from random starts.
major_mode <- function(model, sm, data) {
  t0 <- proc.time()[["elapsed"]]
  modes <- lapply(1:8, function(i) optimizing(sm, data = data, seed = i, init = "random", as_vector = FALSE))
  best <- modes[[which.max(sapply(modes, function(o) o$value))]]
  cat(sprintf("# %s: major mode (log density %.3f) in %.2f s, not counted\n", model, best$value,
              proc.time()[["elapsed"]] - t0))
  best$par
}

# The parameters' names in Stan's order (as as.array() gives them: arrays column-major), from a
# point given as optimizing()'s list of arrays.
flat_names <- function(par) unlist(lapply(names(par), function(p) {
  d <- dim(par[[p]])
  if (is.null(d)) return(if (length(par[[p]]) == 1) p else paste0(p, "[", seq_along(par[[p]]), "]"))
  paste0(p, "[", apply(arrayInd(seq_len(prod(d)), d), 1, paste, collapse = ","), "]")
}))

# Draws (iterations x chains x parameters, with Stan's names and order) -> the reference's
# quantities as a draws_array.
quantity_draws <- function(model, arr) {
  qs <- corpus_quantities(model, dimnames(arr)[[3]])
  q <- sapply(qs, function(x) apply(arr[, , x$of, drop = FALSE], c(1, 2), quantity_fn(x$fn)), simplify = "array")
  dim(q) <- c(dim(arr)[1:2], length(qs))
  dimnames(q) <- list(NULL, NULL, sapply(qs, `[[`, "name"))
  as_draws_array(q)
}

# The faster programs: their file under corpus/, and the data as model.stan's data gives it.
FAST <- list(
  diagnosis = list(file = "diagnosis", data = identity),
  occupancy = list(file = "occupancy", data = identity),
  survey = list(file = "latent_class", data = function(d) list(N = d$N, K = ncol(d$q), cnt = d$cnt, y = d$q)),
  housevotes = list(file = "latent_class", data = function(d) list(N = d$N, K = ncol(d$v), cnt = d$cnt, y = d$v)))

run_stan <- function(model, program, sm, data, mode, seed) {
  t0 <- proc.time()[["elapsed"]]
  f <- sampling(sm, data = data, chains = 4, cores = stan_cores, iter = 2000, warmup = 1000, seed = seed,
                refresh = 0, init = rep(list(mode), 4))
  call_s <- proc.time()[["elapsed"]] - t0
  arr <- as.array(f)
  arr <- arr[, , dimnames(arr)[[3]] != "lp__", drop = FALSE]
  row(model, "stan", program, data$N, seed, sum(get_elapsed_time(f)) / 2, call_s,
      compile_s[[if (program == "model") paste0(model, "/model") else paste0("corpus/", FAST[[model]]$file)]],
      quantity_draws(model, arr))
}

run_jags <- function(model, data, mode, names, seed) {
  monitors <- unique(sub("\\[.*", "", names))
  one <- function(ch) {
    set.seed(1000 * seed + ch)
    t0 <- proc.time()[["elapsed"]]
    jm <- jags.model(file.path(corpus, model, "model.jags"), data = data, n.chains = 1, n.adapt = 500, quiet = TRUE,
                     inits = c(mode, .RNG.name = "base::Mersenne-Twister", .RNG.seed = 1000 * seed + ch))
    update(jm, 500, progress.bar = "none")
    draws <- as.matrix(coda.samples(jm, monitors, 1000, progress.bar = "none")[[1]])
    list(draws = draws[, names, drop = FALSE], secs = proc.time()[["elapsed"]] - t0)
  }
  t0 <- proc.time()[["elapsed"]]
  res <- parallel::mclapply(1:4, one, mc.cores = 2)   # one chain per process, two at a time
  call_s <- proc.time()[["elapsed"]] - t0
  failed <- !sapply(res, is.list)
  if (any(failed)) stop(sprintf("%s: a JAGS chain failed: %s", model, paste(res[failed], collapse = "; ")))
  arr <- aperm(array(unlist(lapply(res, `[[`, "draws")), c(1000, length(names), 4)), c(1, 3, 2))
  dimnames(arr) <- list(NULL, NULL, names)
  row(model, "jags", "model", data$N, seed, sum(sapply(res, `[[`, "secs")) / 2, call_s, 0,
      quantity_draws(model, arr))
}

for (spec in models) {
  model <- sub(":.*", "", spec)
  most <- if (grepl(":", spec)) as.integer(sub(".*:", "", spec)) else .Machine$integer.max
  stan_data <- read_corpus_data(file.path(corpus, model, "data.csv"))
  sm <- stan_for(paste0(model, "/model"), file.path(corpus, model, "model.stan"))
  mode <- major_mode(model, sm, stan_data)
  fast <- FAST[[model]]
  if (!skip_stan && !is.null(fast))
    fast_sm <- stan_for(paste0("corpus/", fast$file), file.path(here, "corpus", paste0(fast$file, ".stan")))
  if (!skip_stan) for (seed in seq_len(min(stan_seeds, most))) {
    if (is.null(fast) || seed == 1) run_stan(model, "model", sm, stan_data, mode, seed)
    if (!is.null(fast)) run_stan(model, "fast", fast_sm, fast$data(stan_data), mode, seed)
  }
  if (has_jags) for (seed in seq_len(min(jags_seeds, most)))
    run_jags(model, read_raw(file.path(corpus, model, "data.csv")), mode, flat_names(mode), seed)
}
