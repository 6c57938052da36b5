source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
args <- commandArgs(TRUE); d <- as.integer(args[1]); N <- as.integer(args[2])
tr <- readRDS(file.path(out_dir, sprintf("truth_d%d.rds", d))); dat <- load_data(d); lp <- make_logpost(dat)
go <- function(name, prop, seed = 1) {
  t0 <- proc.time()[3]; r <- run_imh(prop, lp, N, seed); r$time <- proc.time()[3] - t0
  cat(sprintf("d=%d ", d), fmt_res(name, r), sprintf(" (%.0fs)\n", r$time)); r }
res <- list()
g <- mvt_prop(tr$mu, tr$Sigma); pa <- analytic_tri(dat, tr$mode, tr$SigmaLap)
X <- pa$r(50000); cat("norm check E_q[N/q] =", mean(exp(g$logq(X) - pa$logq(X))), "\n")
# predicted vs true mean shift (whitened Laplace coords)
L <- t(chol(tr$SigmaLap)); cat("true mean (whitened):", round(drop(forwardsolve(L, tr$mu - tr$mode)), 3), "\n")
cat("analytic prop mean  :", round(colMeans(t(forwardsolve(L, t(X) - tr$mode))), 3), "\n")
res$an_bgc <- go("analytic b+g+c", pa)
res$an_bgcdiag <- go("analytic b+g+c(diag only)", analytic_tri(dat, tr$mode, tr$SigmaLap, use_c = "diag"))
res$an_bg <- go("analytic b+g", analytic_tri(dat, tr$mode, tr$SigmaLap, use_c = FALSE))
res$an_bc <- go("analytic b+c", analytic_tri(dat, tr$mode, tr$SigmaLap, use_g = FALSE))
res$an_b <- go("analytic b only (mean shift)", analytic_tri(dat, tr$mode, tr$SigmaLap, use_c = FALSE, use_g = FALSE))
saveRDS(res, file.path(out_dir, sprintf("res_an_d%d.rds", d)))
