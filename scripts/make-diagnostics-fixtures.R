#!/usr/bin/env Rscript
# Regenerates the convergence-diagnostic fixtures under tests/inference/fixtures/:
# one CSV of draws per case (one column per chain, one row per iteration) and
# expected.csv with the values R's posterior package computes for each case.
# The C++ tests read these files and must agree to 1% (relative); R is not
# needed to run them. Run from the repository root:
#   Rscript scripts/make-diagnostics-fixtures.R
suppressPackageStartupMessages(library(posterior))

out_dir <- file.path("tests", "inference", "fixtures")
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
set.seed(20011204)

ar1 <- function(n, rho) {
  # Stationary AR(1) with unit marginal variance.
  x <- numeric(n)
  x[1] <- rnorm(1)
  s <- sqrt(1 - rho^2)
  for (i in 2:n) x[i] <- rho * x[i - 1] + s * rnorm(1)
  x
}
chains <- function(m, n, gen) sapply(seq_len(m), function(j) gen(n, j))

cases <- list(
  iid_normal_4x1000   = chains(4, 1000, function(n, j) rnorm(n)),
  iid_normal_1x101    = chains(1, 101, function(n, j) rnorm(n)),
  ar1_rho050_4x500    = chains(4, 500, function(n, j) ar1(n, 0.5)),
  ar1_rho090_4x1000   = chains(4, 1000, function(n, j) ar1(n, 0.9)),
  ar1_rho099_2x2001   = chains(2, 2001, function(n, j) ar1(n, 0.99)),
  ar1_rhom050_4x400   = chains(4, 400, function(n, j) ar1(n, -0.5)),
  ar1_rhom070_3x301   = chains(3, 301, function(n, j) ar1(n, -0.7)),
  ar1_rho080_2x5000   = chains(2, 5000, function(n, j) ar1(n, 0.8)),
  stuck_4x200         = chains(4, 200, function(n, j) rnorm(n, mean = c(0, 0, 3, 6)[j])),
  stuck_scale_4x300   = chains(4, 300, function(n, j) rnorm(n, sd = c(1, 1, 1, 5)[j])),
  stuck_constant_4x60 = chains(4, 60, function(n, j) rep(c(0, 0, 1, 1)[j], n)),
  t2_4x500            = chains(4, 500, function(n, j) rt(n, df = 2)),
  lognormal_3x333     = chains(3, 333, function(n, j) exp(rnorm(n, sd = 1.2))),
  poisson_ties_4x300  = chains(4, 300, function(n, j) as.numeric(rpois(n, 3))),
  short_2x7           = chains(2, 7, function(n, j) rnorm(n)),
  short_4x5           = chains(4, 5, function(n, j) rnorm(n)),
  short_1x6           = chains(1, 6, function(n, j) rnorm(n)),
  constant_2x50       = chains(2, 50, function(n, j) rep(1.5, n))
)

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))

rows <- list()
for (name in names(cases)) {
  x <- cases[[name]]
  draws <- as.data.frame(apply(x, 2, fmt), stringsAsFactors = FALSE)
  if (ncol(x) == 1 || nrow(x) == 1) draws <- as.data.frame(matrix(fmt(x), nrow = nrow(x)))
  names(draws) <- paste0("chain_", seq_len(ncol(x)))
  write.csv(draws, file.path(out_dir, paste0(name, ".csv")), row.names = FALSE, quote = FALSE)

  q <- quantile2(x, c(0.05, 0.5, 0.95))
  mq <- suppressWarnings(mcse_quantile(x, c(0.05, 0.95)))
  rows[[name]] <- data.frame(
    case = name,
    rhat = suppressWarnings(rhat(x)),
    ess_bulk = suppressWarnings(ess_bulk(x)),
    ess_tail = suppressWarnings(ess_tail(x)),
    mcse_mean = suppressWarnings(mcse_mean(x)),
    mcse_q5 = mq[[1]],
    mcse_q95 = mq[[2]],
    mean = mean(x),
    sd = sd(x),
    q5 = q[[1]],
    q50 = q[[2]],
    q95 = q[[3]]
  )
}
expected <- do.call(rbind, rows)
for (col in names(expected)[-1]) expected[[col]] <- fmt(expected[[col]])
writeLines(c(
  sprintf("# posterior %s, %s", packageVersion("posterior"), R.version.string),
  "# written by scripts/make-diagnostics-fixtures.R"
), file.path(out_dir, "expected.csv"))
suppressWarnings(write.table(expected, file.path(out_dir, "expected.csv"), sep = ",",
                             row.names = FALSE, quote = FALSE, append = TRUE))
cat("wrote", length(cases), "cases to", out_dir, "\n")
