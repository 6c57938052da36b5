source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R"); source("bench/experiments/skewed_proposal/analytic.R")
d <- 50; N <- 30000; dat <- load_data(d); lp <- make_logpost(dat); m <- find_mode(dat)
pa <- analytic_tri(dat, m$mode, m$Sigma, infl = 1.02)
set.seed(9); X <- NULL; lr <- NULL
for (i in 1:4) { Xi <- pa$r(20000); X <- rbind(X, Xi); lr <- c(lr, lp(Xi) - pa$logq(Xi)) }
ps <- psis(lr, r_eff = 1); w <- exp(lr - max(lr))
cat("IS from analytic proposal: pareto k", pareto_k_values(ps), " ESS", sum(w)^2 / sum(w^2), "of", length(w), "\n")
mo <- wmoments(X, w)
cat("sd ratio post/laplace range:", range(round(sqrt(diag(mo$Sigma) / diag(m$Sigma)), 3)), "\n")
go <- function(name, prop) { r <- run_imh(prop, lp, N, 1); cat(sprintf("d=%d ", d), fmt_res(name, r), sprintf(" (N=%d)\n", N)) }
go("true_moments_gauss (IS 80k)", mvt_prop(mo$mu, mo$Sigma))
go("true_moments_t100 (IS 80k)", mvt_prop(mo$mu, mo$Sigma, 100))
go("true_mean+laplace_cov_t100", mvt_prop(mo$mu, m$Sigma, 100))
set.seed(1001); p5 <- mvt_prop(m$mode, m$Sigma, 5); Xp <- p5$r(1000); lrp <- lp(Xp) - p5$logq(Xp)
psp <- psis(lrp, r_eff = 1); cat("pilot pareto k", pareto_k_values(psp), "\n")
wp <- as.numeric(weights(psp, log = FALSE, normalize = TRUE)); mp <- colSums(Xp * wp)
go("pilot1_mean+laplace_cov_t100", mvt_prop(mp, m$Sigma, 100))
