source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
d <- 50; N <- 30000; dat <- load_data(d); lp <- make_logpost(dat); m <- find_mode(dat)
go <- function(name, prop) { t0 <- proc.time()[3]; r <- run_imh(prop, lp, N, 1)
  cat(sprintf("d=%d ", d), fmt_res(name, r), sprintf(" (%.0fs, N=%d)\n", proc.time()[3] - t0, N)) }






for (f in c(1.03, 1.05)) go(sprintf("analytic b+g+c infl%.2f", f), analytic_tri(dat, m$mode, m$Sigma, infl = f))
