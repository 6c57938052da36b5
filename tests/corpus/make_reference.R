# Regenerates tests/corpus/<model>/reference.json from a long Stan run of <model>/model.stan.
# Usage: nice -n 10 Rscript tests/corpus/make_reference.R MODEL [DRAWS_PER_CHAIN] [SEED] [within [DRAWS_CSV]]
# (defaults 25000 and 1). With `within`, a symmetric model's run writes only its parameters
# within one labeling, to <model>/within.json (for a model whose full run is too long to
# repeat). Four chains, two at a time, all started at the major mode found by
# optimizing() from 8 random starts; R-hat and ESS are rank-normalised (Vehtari et al. 2021).
here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(here, "stan_setup.R"))
use_debian_bh()
suppressMessages(library(rstan))
args <- commandArgs(trailingOnly = TRUE)
model <- args[1]
draws <- if (length(args) > 1) as.integer(args[2]) else 25000L
seed <- if (length(args) > 2) as.integer(args[3]) else 1L
within_only <- length(args) > 3 && args[4] == "within"
warmup <- 1000L                             # NUTS adapts well within 1000 on these posteriors
dir <- file.path(here, model)
source(file.path(here, "quantities.R"))
source(file.path(here, "corpus_data.R"))

data <- read_corpus_data(file.path(dir, "data.csv"))
sm <- stan_model(file.path(dir, "model.stan"))
set.seed(seed)
modes <- lapply(1:8, function(i) optimizing(sm, data = data, seed = seed + i, init = "random",
                                            as_vector = FALSE))
best <- modes[[which.max(sapply(modes, function(o) o$value))]]
start <- Sys.time()
fit <- sampling(sm, data = data, chains = 4, cores = 2, iter = warmup + draws, warmup = warmup,
                seed = seed, init = rep(list(best$par), 4), refresh = 0)
seconds <- as.numeric(difftime(Sys.time(), start, units = "secs"))
arr <- as.array(fit)                        # iterations x chains x parameters
# DRAWS_CSV (a fifth argument, with `within`): every draw with its chain and lp__, for
# relabel_reference.py, where the chains do not keep to one labeling.
if (within_only && length(args) > 4) {
  flat <- do.call(rbind, lapply(seq_len(dim(arr)[2]), function(c)
    data.frame(chain = c, arr[, c, , drop = TRUE], check.names = FALSE)))
  write.csv(flat, args[5], row.names = FALSE)
}
arr <- arr[, , dimnames(arr)[[3]] != "lp__", drop = FALSE]
# Each quantity's mean, sd and diagnostics over the draws.
summarise_quantities <- function(qs) lapply(qs, function(q) {
  x <- apply(arr[, , q$of, drop = FALSE], c(1, 2), quantity_fn(q$fn))
  # mcse_sd: the sd's own Monte Carlo error, large where a tail is heavy; check.py allows
  # for it (and for vbn's) when it judges an sd.
  list(name = q$name, fn = q$fn, of = as.list(q$of), mean = mean(x), sd = sd(x), rhat = Rhat(x),
       ess_bulk = ess_bulk(x), ess_tail = ess_tail(x), mcse_in_sd = 1 / sqrt(ess_bulk(x)),
       mcse_sd = posterior::mcse_sd(x))
})
out <- summarise_quantities(corpus_quantities(model, dimnames(arr)[[3]]))
within <- summarise_quantities(within_quantities(model, dimnames(arr)[[3]]))
prov <- list(model = model, command = sprintf("nice -n 10 Rscript tests/corpus/make_reference.R %s %d %d%s",
                                              model, draws, seed,
                                              if (!within_only) "" else if (length(args) > 4) " within DRAWS_CSV" else " within"),
             seed = seed, chains = 4, warmup = warmup, draws = draws,
             init = "all chains at the highest of 8 optimizing() modes",
             mode_log_density = best$value,
             max_rhat = max(sapply(out, `[[`, "rhat")),
             min_ess = min(sapply(out, function(o) min(o$ess_bulk, o$ess_tail))),
             max_mcse_in_sd = max(sapply(out, `[[`, "mcse_in_sd")),
             divergent = sum(get_divergent_iterations(fit)),
             rstan = as.character(packageVersion("rstan")),
             # Symmetric models: the largest R-hat over the parameters themselves, near 1 only
             # when every chain stayed in the labeling it started in.
             within_max_rhat = if (length(within)) max(sapply(within, `[[`, "rhat")) else NA,
             stan = stan_version(), sampling_seconds = round(seconds, 1))
result <- if (within_only) list(provenance = prov) else list(provenance = prov, quantities = out)
if (length(within)) result$within_labeling <- within
writeLines(jsonlite_free_json(result), file.path(dir, if (within_only) "within.json" else "reference.json"))
cat(sprintf("%s: max R-hat %.4f, min ESS %.0f, max MC error %.3f sd, %.0f s\n", model,
            prov$max_rhat, prov$min_ess, prov$max_mcse_in_sd, seconds))
if (prov$max_rhat > 1.001) cat("WARNING: R-hat above 1.001: run longer\n")
if (length(within) && prov$within_max_rhat > 1.001)
  cat(sprintf("WARNING: R-hat %.4f over the parameters themselves: chains left their labeling\n",
              prov$within_max_rhat))
