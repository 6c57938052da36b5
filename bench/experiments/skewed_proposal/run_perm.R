source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
args <- commandArgs(TRUE); d <- as.integer(args[1]); N <- as.integer(args[2])
dat0 <- load_data(d)
for (ps in c(11, 12, 0)) {
  set.seed(ps); perm <- if (ps == 0) d:1 else sample(d)
  dat <- dat0; dat$X <- dat0$X[, perm]; lp <- make_logpost(dat); m <- find_mode(dat)
  for (f in c(1, 1.01)) {
    r <- run_imh(analytic_tri(dat, m$mode, m$Sigma, infl = f), lp, N, 3)
    cat(sprintf("d=%d ", d), fmt_res(sprintf("analytic bgc perm%s infl%.2f", if (ps == 0) "rev" else ps, f), r), "\n")
  }
  r <- run_imh(analytic_tri(dat, m$mode, m$Sigma, use_c = "diag", infl = 1.01), lp, N, 3)
  cat(sprintf("d=%d ", d), fmt_res(sprintf("analytic bg+cdiag perm%s infl1.01", if (ps == 0) "rev" else ps), r), "\n")
}
