#!/usr/bin/env Rscript
# Regenerates the PSIS-LOO fixtures under tests/inference/fixtures/loo/: per case, the
# pointwise log-likelihood draws (CASE.csv: a column `chain`, then log_lik.1 … log_lik.N, one
# line per draw, chains one after another) and what R's loo computes from them with
# loo(array, r_eff = relative_eff(exp(array))): CASE_pointwise.csv (one line per data row)
# and estimates.csv (one line per case). The C++ test (tests/inference/test_loo.cpp) reads
# these and must agree to 1e-8; R is not needed to run it. Run from the repository root:
#   Rscript scripts/make-loo-fixtures.R
suppressPackageStartupMessages(library(loo))

out_dir <- file.path("tests", "inference", "fixtures", "loo")
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
set.seed(20250331)

# Draws of a normal mean μ (known sd 1) given y, as chains of a Metropolis sampler: they
# repeat values (rejections), so ties and autocorrelation (r_eff below 1) are exercised.
# Rows far from the rest (outliers) give Pareto k̂ above 0.7.
metropolis_chains <- function(y, chains, iters, step) {
  lp <- function(mu) sum(dnorm(y, mu, 1, log = TRUE)) + dnorm(mu, 0, 10, log = TRUE)
  sapply(seq_len(chains), function(j) {
    mu <- rnorm(1, mean(y), 1)
    out <- numeric(iters)
    for (i in seq_len(iters)) {
      prop <- mu + step * rnorm(1)
      if (log(runif(1)) < lp(prop) - lp(mu)) mu <- prop
      out[i] <- mu
    }
    out
  })
}

# log_lik array: iterations × chains × rows.
make_case <- function(y, chains, iters, step) {
  mu <- metropolis_chains(y, chains, iters, step)
  ll <- array(NA_real_, dim = c(iters, chains, length(y)))
  for (i in seq_along(y)) ll[, , i] <- dnorm(y[i], mu, 1, log = TRUE)
  ll
}

# Outliers at rows 3 (moderate) and 17 (extreme) of 20, among 20 draws of N(0, 1); 4 chains
# × 500, a length whose FFT size is itself (500 = 2² 5³).
y1 <- rnorm(20)
y1[3] <- 4.5
y1[17] <- 9
# 3 chains × 301 draws (301 = 7 · 43: loo's autocovariance pads to 320 and scales by 320/301),
# 12 rows, one outlier.
y2 <- rnorm(12)
y2[5] <- -6
cases <- list(
  outliers_4x500 = make_case(y1, 4, 500, 0.8),
  sticky_3x301 = make_case(y2, 3, 301, 1.5)
)

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))

est_rows <- list()
for (name in names(cases)) {
  ll <- cases[[name]]
  dims <- dim(ll)
  flat <- matrix(ll, nrow = dims[1] * dims[2])
  draws <- data.frame(chain = rep(seq_len(dims[2]), each = dims[1]))
  for (i in seq_len(dims[3])) draws[[paste0("log_lik.", i)]] <- fmt(flat[, i])
  write.csv(draws, file.path(out_dir, paste0(name, ".csv")), row.names = FALSE, quote = FALSE)

  r_eff <- relative_eff(exp(ll))
  fit <- suppressWarnings(loo(ll, r_eff = r_eff))
  pw <- as.data.frame(fit$pointwise)
  pw$n_eff <- fit$diagnostics$n_eff
  pw$r_eff <- r_eff
  for (col in names(pw)) pw[[col]] <- fmt(pw[[col]])
  write.csv(pw, file.path(out_dir, paste0(name, "_pointwise.csv")), row.names = FALSE, quote = FALSE)
  e <- fit$estimates
  est_rows[[name]] <- data.frame(
    case = name,
    elpd_loo = fmt(e["elpd_loo", "Estimate"]), se_elpd_loo = fmt(e["elpd_loo", "SE"]),
    p_loo = fmt(e["p_loo", "Estimate"]), se_p_loo = fmt(e["p_loo", "SE"]),
    looic = fmt(e["looic", "Estimate"]), se_looic = fmt(e["looic", "SE"]),
    mcse_elpd_loo = fmt(mcse_loo(fit))
  )
}
writeLines(c(
  sprintf("# loo %s, %s", packageVersion("loo"), R.version.string),
  "# written by scripts/make-loo-fixtures.R"
), file.path(out_dir, "estimates.csv"))
suppressWarnings(write.table(do.call(rbind, est_rows), file.path(out_dir, "estimates.csv"), sep = ",",
                             row.names = FALSE, quote = FALSE, append = TRUE))
cat("wrote", length(cases), "cases to", out_dir, "\n")
