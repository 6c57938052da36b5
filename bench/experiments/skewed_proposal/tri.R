# Triangular (Knothe-Rosenblatt style) proposal in whitened coordinates.
# y = L^{-1}(x - mu), L = chol(Sigma) (from the fitting sample).
# y_k = m_k(y_<k) + c_k + exp(s_k + g_k . y_<k) * r_k,  r_k = sinh((asinh(z_k) + a_k)/b_k),  z_k ~ N(0,1)
# m_k = beta_k . f_k(y_<k), f = [1, y_<k, quad], quad = "none" | "diag" (y_j^2) | "full" (y_i y_j, i<=j<k)
# log q(x) = sum_k [log phi(z_k) + log b_k + log cosh(b_k asinh r_k - a_k) - 0.5 log(1+r_k^2) - u_k] - log|L|

feat <- function(Y, k, quad) {
  n <- nrow(Y)
  if (k == 1) return(matrix(1, n, 1))
  P <- Y[, 1:(k - 1), drop = FALSE]
  F <- cbind(1, P)
  if (quad == "diag") F <- cbind(F, P^2)
  if (quad == "full") {
    ij <- which(upper.tri(diag(k - 1), diag = TRUE), arr.ind = TRUE)
    F <- cbind(F, P[, ij[, 1], drop = FALSE] * P[, ij[, 2], drop = FALSE])
  }
  F
}

# ridge WLS with GCV choice of lambda (intercept unpenalised)
ridge_gcv <- function(F, yk, w, lams = c(0, 10^seq(-2, 6, by = 0.5))) {
  sw <- sqrt(w)
  Fw <- F * sw; yw <- yk * sw
  p <- ncol(F); n <- nrow(F)
  if (p == 1) return(list(beta = sum(w * yk) / sum(w), lam = 0))
  # centre (handle intercept): weighted centring
  mf <- colSums(F * w) / sum(w); my <- sum(w * yk) / sum(w)
  Fc <- sweep(F[, -1, drop = FALSE], 2, mf[-1]) * sw; yc <- (yk - my) * sw
  sv <- svd(Fc)
  uy <- drop(crossprod(sv$u, yc))
  neff <- sum(w)^2 / sum(w^2)
  best <- NULL
  for (lam in lams) {
    f <- sv$d^2 / (sv$d^2 + lam)
    fit <- drop(sv$u %*% (f * uy))
    rss <- sum((yc - fit)^2)
    df <- sum(f)
    gcv <- rss / (1 - df / neff)^2
    if (is.finite(gcv) && df < neff && (is.null(best) || gcv < best$gcv)) best <- list(gcv = gcv, lam = lam, f = f)
  }
  b <- drop(sv$v %*% (best$f / sv$d * uy))
  b[!is.finite(b)] <- 0
  list(beta = c(my - sum(mf[-1] * b), b), lam = best$lam)
}

# negative weighted log-lik (and gradient) of scale/SAS stage for one coordinate
sas_nll <- function(th, e, P, w, hetero, sas) {
  n <- length(e); q <- if (hetero) ncol(P) else 0
  c0 <- th[1]; s <- th[2]; g <- if (q > 0) th[3:(2 + q)] else numeric(0)
  a <- if (sas) th[3 + q] else 0; lb <- if (sas) th[4 + q] else 0; b <- exp(lb)
  u <- if (q > 0) s + drop(P %*% g) else rep(s, n)
  sig <- exp(u); r <- (e - c0) / sig; h <- asinh(r); t <- b * h - a; z <- sinh(t)
  l <- -0.5 * z^2 + lb + log(cosh(t)) - 0.5 * log1p(r^2) - u
  dt <- -z * cosh(t) + tanh(t)
  dr <- dt * b / sqrt(1 + r^2) - r / (1 + r^2)
  du <- -dr * r - 1
  gr <- c(sum(w * dr * (-1 / sig)), sum(w * du))
  if (q > 0) gr <- c(gr, drop(crossprod(P, w * du)))
  if (sas) gr <- c(gr, sum(w * (-dt)), sum(w * (b * h * dt + 1)))
  val <- -sum(w * l)
  attr(val, "gradient") <- -gr
  val
}

fit_tri <- function(X, w, quad = "diag", hetero = FALSE, sas = FALSE, base = NULL) {
  w <- w / sum(w) * length(w)
  mo <- if (is.null(base)) wmoments(X, w) else base
  L <- t(chol(mo$Sigma)); mu <- mo$mu; d <- ncol(X)
  Y <- t(forwardsolve(L, t(X) - mu))
  comp <- vector("list", d); lams <- numeric(d)
  for (k in 1:d) {
    F <- feat(Y, k, quad)
    rf <- ridge_gcv(F, Y[, k], w); lams[k] <- rf$lam
    e <- Y[, k] - drop(F %*% rf$beta)
    P <- if (k > 1) Y[, 1:(k - 1), drop = FALSE] else matrix(0, nrow(Y), 0)
    h <- hetero && k > 1
    th0 <- c(0, log(sqrt(sum(w * e^2) / sum(w))), if (h) rep(0, k - 1), if (sas) c(0, 0))
    fn <- function(th) { v <- sas_nll(th, e, P, w, h, sas); as.numeric(v) }
    gr <- function(th) attr(sas_nll(th, e, P, w, h, sas), "gradient")
    th <- if (h || sas) optim(th0, fn, gr, method = "BFGS", control = list(maxit = 500))$par else th0
    q <- if (h) k - 1 else 0
    comp[[k]] <- list(beta = rf$beta, c0 = th[1], s = th[2], g = if (q > 0) th[3:(2 + q)] else numeric(0),
                      a = if (sas) th[3 + q] else 0, b = if (sas) exp(th[4 + q]) else 1)
  }
  pr <- build_tri(mu, L, comp, quad); pr$lams <- lams; pr
}

build_tri <- function(mu, L, comp, quad, df = Inf) {
  d <- length(mu); ldet <- sum(log(diag(L)))
  list(name = "tri", d = d,
       r = function(n) {
         Z <- matrix(rnorm(n * d), n, d); Y <- matrix(0, n, d)
         if (is.finite(df)) Z <- Z / sqrt(rchisq(n, df) / df)
         for (k in 1:d) {
           cp <- comp[[k]]
           m <- drop(feat(Y, k, quad) %*% cp$beta)
           u <- cp$s + if (length(cp$g)) drop(Y[, 1:(k - 1), drop = FALSE] %*% cp$g) else 0
           r <- sinh((asinh(Z[, k]) + cp$a) / cp$b)
           Y[, k] <- m + cp$c0 + exp(u) * r
         }
         sweep(Y %*% t(L), 2, mu, "+")
       },
       logq = function(X) {
         Y <- t(forwardsolve(L, t(X) - mu)); out <- rep(-d / 2 * log(2 * pi) - ldet, nrow(Y)); qz <- 0
         for (k in 1:d) {
           cp <- comp[[k]]
           m <- drop(feat(Y, k, quad) %*% cp$beta)
           u <- cp$s + if (length(cp$g)) drop(Y[, 1:(k - 1), drop = FALSE] %*% cp$g) else 0
           r <- (Y[, k] - m - cp$c0) / exp(u); t <- cp$b * asinh(r) - cp$a; z <- sinh(t)
           out <- out - 0.5 * z^2 + log(cp$b) + log(cosh(t)) - 0.5 * log1p(r^2) - u
           qz <- qz + z^2
         }
         if (is.finite(df)) out <- out + 0.5 * qz + lgamma((df + d) / 2) - lgamma(df / 2) - d / 2 * log(df / 2) -
           (df + d) / 2 * log1p(qz / df)
         out
       })
}
