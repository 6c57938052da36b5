source("bench/experiments/skewed_proposal/common.R")
d <- as.integer(commandArgs(TRUE)[1]); Ntr <- 200000
dat <- load_data(d); lp <- make_logpost(dat)
m <- find_mode(dat)
set.seed(100 + d)
pt5 <- mvt_prop(m$mode, m$Sigma, df = 5)
t0 <- proc.time()
X <- pt5$r(Ntr); lr <- lp(X) - pt5$logq(X)
cat("logpost eval time", (proc.time() - t0)[3], "\n")
ps <- psis(lr, r_eff = 1)
cat("d=", d, " pareto k =", pareto_k_values(ps), " IS ESS =", sum(exp(lr-max(lr)))^2/sum(exp(lr-max(lr))^2), "\n")
w <- exp(lr - max(lr)); w <- w / sum(w)
mo <- wmoments(X, w)
cat("mean - mode (in post sd units):", round((mo$mu - m$mode) / sqrt(diag(mo$Sigma)), 3), "\n")
cat("sd ratio post/laplace:", round(sqrt(diag(mo$Sigma) / diag(m$Sigma)), 3), "\n")
# whitened third cumulant
L <- t(chol(mo$Sigma)); E <- t(forwardsolve(L, t(X) - mo$mu))
K3 <- array(0, c(d, d, d))
for (k in 1:d) K3[, , k] <- crossprod(E * (w * E[, k]), E)
cat("Frobenius norm of whitened 3rd cumulant:", sqrt(sum(K3^2)), "\n")
# best rank-1 symmetric approx by power iteration
u <- rnorm(d); u <- u / sqrt(sum(u^2))
for (it in 1:500) { v <- sapply(1:d, function(k) drop(t(u) %*% K3[, , k] %*% u)); u <- v / sqrt(sum(v^2)) }
lam <- sum(sapply(1:d, function(k) u[k] * drop(t(u) %*% K3[, , k] %*% u)))
cat("rank-1: lambda (skewness along u) =", lam, " frac of ||K3||^2 explained =", lam^2 / sum(K3^2), "\n")
cat("marginal skewness of whitened-Cholesky coords:", round(sapply(1:d, function(k) K3[k,k,k]), 3), "\n")
saveRDS(list(d = d, mode = m$mode, SigmaLap = m$Sigma, mu = mo$mu, Sigma = mo$Sigma, X = X, w = w, lr = lr, K3 = K3, u = u, lam = lam),
        file.path(out_dir, sprintf("truth_d%d.rds", d)))
