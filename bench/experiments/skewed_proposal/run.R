source("bench/experiments/skewed_proposal/common.R"); source("bench/experiments/skewed_proposal/tri.R")
args <- commandArgs(TRUE); d <- as.integer(args[1]); N <- as.integer(args[2]); which <- args[3]
npilot <- if (length(args) >= 4) as.integer(args[4]) else 1000
pseeds <- if (length(args) >= 5) (if (args[5] == "none") integer(0) else as.integer(strsplit(args[5], ",")[[1]])) else 1
tr <- readRDS(file.path(out_dir, sprintf("truth_d%d.rds", d)))
dat <- load_data(d); lp <- make_logpost(dat)
# truth resample (40k) for "fit from big sample"
set.seed(7); u <- (runif(1) + 0:39999) / 40000
Xbig <- tr$X[findInterval(u, cumsum(tr$w)) + 1, ]
pilot <- function(seed) {
  set.seed(1000 + seed)
  p5 <- mvt_prop(tr$mode, tr$SigmaLap, 5); Xp <- p5$r(npilot); lr <- lp(Xp) - p5$logq(Xp)
  ps <- psis(lr, r_eff = 1)
  list(X = Xp, w = as.numeric(weights(ps, log = FALSE, normalize = TRUE)), k = pareto_k_values(ps))
}
res <- list()
go <- function(name, prop, seed = 1) {
  t0 <- proc.time()[3]; r <- run_imh(prop, lp, N, seed); r$time <- proc.time()[3] - t0
  cat(sprintf("d=%d ", d), fmt_res(name, r), sprintf(" (%.0fs)\n", r$time)); flush.console()
  res[[name]] <<- r
}
if (which == "base2") {
  go("true_mean+laplace_cov_t100", mvt_prop(tr$mu, tr$SigmaLap, 100))
  for (s in pseeds) { pl <- pilot(s); mo <- wmoments(pl$X, pl$w)
    go(sprintf("pilot%d_mean+laplace_cov_t100", s), mvt_prop(mo$mu, tr$SigmaLap, 100)) }
} else if (which == "base") {
  go("laplace_gauss(mode,H^-1)", mvt_prop(tr$mode, tr$SigmaLap))
  go("laplace_t100", mvt_prop(tr$mode, tr$SigmaLap, 100))
  go("true_moments_gauss", mvt_prop(tr$mu, tr$Sigma))
  go("true_moments_t100", mvt_prop(tr$mu, tr$Sigma, 100))
  for (s in pseeds) { pl <- pilot(s); mo <- wmoments(pl$X, pl$w)
    cat("pilot", s, "pareto k", pl$k, "\n")
    go(sprintf("pilot%d_moments_gauss", s), mvt_prop(mo$mu, mo$Sigma))
    go(sprintf("pilot%d_mean+laplace_cov_t100", s), mvt_prop(mo$mu, tr$SigmaLap, 100)) }
  go("true_mean+laplace_cov_t100", mvt_prop(tr$mu, tr$SigmaLap, 100))
} else {
  spec <- strsplit(which, "_")[[1]]   # e.g. diag_het_sas / full / none
  quad <- spec[1]; het <- "het" %in% spec; sas <- "sas" %in% spec
  base <- if ("lap" %in% spec) list(mu = tr$mode, Sigma = tr$SigmaLap) else NULL
  for (s in pseeds) {
    pl <- pilot(s)
    t0 <- proc.time()[3]; pr <- fit_tri(pl$X, pl$w, quad, het, sas, base)
    cat(sprintf("fit time %.1fs, gcv lambdas: %s\n", proc.time()[3] - t0, paste(pr$lams, collapse = " ")))
    go(sprintf("tri_%s pilot%d(n=%d)", which, s, npilot), pr)
  }
  t0 <- proc.time()[3]; pr <- fit_tri(Xbig, rep(1, nrow(Xbig)), quad, het, sas, base)
  cat(sprintf("fit time %.1fs\n", proc.time()[3] - t0))
  go(sprintf("tri_%s truth40k", which), pr)
}
saveRDS(res, file.path(out_dir, sprintf("res_d%d_%s_n%d.rds", d, which, npilot)))
