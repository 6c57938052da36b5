#!/usr/bin/env Rscript
# Checks that R reads vbn's CmdStan CSV files unchanged: rstan::read_stan_csv loads them,
# and posterior::summarise_draws on what rstan read gives the same mean, sd, MCSE,
# quantiles, R-hat and ESS as vbn's own summary of the same draws.
#
# Usage: Rscript scripts/check-csv-with-r.R OURS.csv FILE_1.csv [FILE_2.csv ...]
#   OURS.csv: vbn's summary at full precision, columns
#             name,mean,sd,mcse_mean,q5,q50,q95,ess_bulk,ess_tail,rhat
#             (optionally followed by comment lines "# warmup_seconds = X" etc. are not used)
# Exit status: 0 all agree (relative difference below 1e-8), 1 a difference or a read
# failure, 2 rstan or posterior is not installed.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) {
  message("usage: check-csv-with-r.R OURS.csv FILE_1.csv [FILE_2.csv ...]")
  quit(status = 1)
}
for (pkg in c("rstan", "posterior")) {
  if (!requireNamespace(pkg, quietly = TRUE)) {
    message("R package ", pkg, " is not installed; nothing checked")
    quit(status = 2)
  }
}
ours <- read.csv(args[1], stringsAsFactors = FALSE, comment.char = "#")
files <- args[-1]

fit <- suppressMessages(rstan::read_stan_csv(files))
arr <- as.array(fit)  # iterations x chains x parameters, names as w[1], W[2,3]
draws <- posterior::as_draws_array(arr)
theirs <- posterior::summarise_draws(
  draws,
  mean = mean, sd = stats::sd, mcse_mean = posterior::mcse_mean,
  q = ~posterior::quantile2(.x, probs = c(0.05, 0.5, 0.95)),
  rhat = posterior::rhat, ess_bulk = posterior::ess_bulk, ess_tail = posterior::ess_tail
)
theirs <- as.data.frame(theirs)

status <- 0
fail <- function(...) {
  message("MISMATCH: ", ...)
  status <<- 1
}
if (fit@sim$chains != length(files)) fail("rstan read ", fit@sim$chains, " chains from ", length(files), " files")
missing <- setdiff(ours$name, theirs$variable)
if (length(missing) > 0) fail("rstan did not find the parameters ", paste(missing, collapse = ", "))
sp <- rstan::get_sampler_params(fit, inc_warmup = FALSE)
expected_sampler <- c("accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__")
if (!all(expected_sampler %in% colnames(sp[[1]]))) fail("sampler columns read by rstan: ", paste(colnames(sp[[1]]), collapse = ", "))
elapsed <- rstan::get_elapsed_time(fit)
if (any(is.na(elapsed))) fail("rstan could not read the elapsed times")

cols <- c("mean", "sd", "mcse_mean", "q5", "q50", "q95", "rhat", "ess_bulk", "ess_tail")
worst <- 0
for (i in seq_len(nrow(ours))) {
  j <- match(ours$name[i], theirs$variable)
  if (is.na(j)) next
  for (col in cols) {
    a <- as.numeric(ours[[col]][i])
    b <- as.numeric(theirs[[col]][j])
    if (is.na(a) && is.na(b)) next
    rel <- if (b == 0) abs(a) else abs(a - b) / abs(b)
    if (is.na(rel) || rel > 1e-8) fail(ours$name[i], " ", col, ": vbn ", a, ", posterior ", b)
    if (!is.na(rel)) worst <- max(worst, rel)
  }
}
cat(sprintf("rstan read %d chains x %d draws of %d parameters; posterior %s vs vbn: largest relative difference %.3g\n",
            fit@sim$chains, dim(arr)[1], nrow(ours), packageVersion("posterior"), worst))
cat("elapsed (rstan):", paste(format(elapsed[, 1]), format(elapsed[, 2]), collapse = "; "), "\n")
quit(status = status)
