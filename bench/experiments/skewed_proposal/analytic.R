# Analytic third-order triangular proposal: whiten at mode with Laplace cov; match cubic term of log posterior.
analytic_tri <- function(dat, mode, SigmaLap, use_c = TRUE, use_g = TRUE, use_b = TRUE, offset = 0.5, df = Inf, infl = 1) {
  d <- dat$d; L <- t(chol(SigmaLap))
  Xt <- dat$X %*% L                       # whitened covariates x~_t = L^T x_t (rows)
  eta <- offset + drop(dat$X %*% mode); p <- plogis(eta)
  c3 <- -p * (1 - p) * (1 - 2 * p)        # third derivative of log-lik wrt eta (y-independent)
  A <- array(0, c(d, d, d))
  for (a in 1:d) A[, , a] <- crossprod(Xt * (c3 * Xt[, a]), Xt)
  comp <- vector("list", d)
  for (k in 1:d) {
    b <- if (use_b) (A[k, k, k] + if (k < d) sum(sapply((k + 1):d, function(j) A[k, j, j])) else 0) / 2 else 0
    if (k == 1) { beta <- b; g <- numeric(0) } else {
      ij <- which(upper.tri(diag(k - 1), diag = TRUE), arr.ind = TRUE)
      cq <- if (!identical(use_c, FALSE)) ifelse(ij[, 1] == ij[, 2], A[k, ij[, 1], ij[, 1]][cbind(seq_len(nrow(ij)), seq_len(nrow(ij)))] / 2, 0) else rep(0, nrow(ij))
      if (isTRUE(use_c)) for (r in seq_len(nrow(ij))) cq[r] <- if (ij[r, 1] == ij[r, 2]) A[k, ij[r, 1], ij[r, 1]] / 2 else A[k, ij[r, 1], ij[r, 2]]
      if (identical(use_c, "diag")) for (r in seq_len(nrow(ij))) cq[r] <- if (ij[r, 1] == ij[r, 2]) A[k, ij[r, 1], ij[r, 1]] / 2 else 0
      beta <- c(b, rep(0, k - 1), cq)
      g <- if (use_g) sapply(1:(k - 1), function(i) A[k, k, i] / 2) else rep(0, k - 1)
    }
    comp[[k]] <- list(beta = beta, c0 = 0, s = 0, g = g, a = 0, b = 1)
  }
  L <- L * infl
  pr <- build_tri(mode, L, comp, "full", df); pr$A <- A; pr
}
