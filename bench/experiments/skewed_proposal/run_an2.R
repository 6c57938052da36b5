source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
args <- commandArgs(TRUE); d <- as.integer(args[1]); N <- as.integer(args[2])
tr <- readRDS(file.path(out_dir, sprintf("truth_d%d.rds", d))); dat <- load_data(d); lp <- make_logpost(dat)
go <- function(name, prop, seed = 1) {
  t0 <- proc.time()[3]; r <- run_imh(prop, lp, N, seed); r$time <- proc.time()[3] - t0
  cat(sprintf("d=%d ", d), fmt_res(name, r), sprintf(" (%.0fs)\n", r$time)); r }
res <- list()
g <- mvt_prop(tr$mu, tr$Sigma); pa <- analytic_tri(dat, tr$mode, tr$SigmaLap, df = 100)
X <- pa$r(50000); cat("norm check (t100) E_q[N/q] =", mean(exp(g$logq(X) - pa$logq(X))), "\n")
L <- t(chol(tr$SigmaLap)); cat("sd ratio analytic-prop / truth:", round(apply(X, 2, sd) / sqrt(diag(tr$Sigma)), 3), "\n")
res$t100 <- go("analytic b+g+c, t(100) base", pa, 2)
for (f in c(1.01, 1.02)) res[[paste0("infl", f)]] <- go(sprintf("analytic b+g+c, infl %.2f", f), analytic_tri(dat, tr$mode, tr$SigmaLap, infl = f), 2)
res$g2 <- go("analytic b+g+c, seed 2 (repeat)", analytic_tri(dat, tr$mode, tr$SigmaLap), 2)
saveRDS(res, file.path(out_dir, sprintf("res_an2_d%d.rds", d)))
