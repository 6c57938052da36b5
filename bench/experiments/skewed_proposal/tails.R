source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
for (d in c(10, 20)) {
  tr <- readRDS(file.path(out_dir, sprintf("truth_d%d.rds", d))); dat <- load_data(d); lp <- make_logpost(dat)
  props <- list(laplace_t100 = mvt_prop(tr$mode, tr$SigmaLap, 100),
                analytic_bgc = analytic_tri(dat, tr$mode, tr$SigmaLap),
                analytic_bgc_infl1.01 = analytic_tri(dat, tr$mode, tr$SigmaLap, infl = 1.01),
                analytic_bgc_t100_infl1.01 = analytic_tri(dat, tr$mode, tr$SigmaLap, infl = 1.01, df = 100))
  for (nm in names(props)) { set.seed(5); X <- props[[nm]]$r(2e5); lr <- lp(X) - props[[nm]]$logq(X)
    k <- pareto_k_values(suppressWarnings(psis(lr, r_eff = 1)))
    cat(sprintf("d=%d %-28s pareto-k(log w, 2e5 draws)=%.3f  sd(log w)=%.4f  max w/mean w=%.2f\n", d, nm, k, sd(lr), max(exp(lr - max(lr))) / mean(exp(lr - max(lr))))) }
}
