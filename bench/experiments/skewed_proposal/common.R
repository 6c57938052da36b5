# Common code for the skewed-proposal spike. Single-threaded (reference BLAS).
# Run from the repository root. Large intermediate files (the "truth" draws, results) go to
# $SKEW_OUT (default: a temporary directory).
out_dir <- Sys.getenv("SKEW_OUT", tempdir())
suppressPackageStartupMessages({library(posterior); library(loo)})

load_data <- function(d) {
  D <- as.matrix(read.csv(sprintf("examples/paper/unimodal_d%d.csv", d), check.names = FALSE))
  list(X = D[, 1:d, drop = FALSE], y = D[, d + 1], d = d)
}

# stable log sigma(z)
logsig <- function(z) pmin(z, 0) - log1p(exp(-abs(z)))

# log posterior (up to const) for a matrix W (n x d, one draw per row); chunked
make_logpost <- function(dat, prior_sd = 10, offset = 0.5) {
  XY <- dat$X * dat$y          # rows y_t x_t
  off <- offset * dat$y
  function(W) {
    W <- matrix(W, ncol = dat$d)
    n <- nrow(W); out <- numeric(n)
    for (s in seq(1, n, by = 4000)) {
      i <- s:min(n, s + 3999)
      Z <- XY %*% t(W[i, , drop = FALSE]) + off
      out[i] <- colSums(logsig(Z)) - 0.5 * rowSums(W[i, , drop = FALSE]^2) / prior_sd^2
    }
    out
  }
}

find_mode <- function(dat, prior_sd = 10, offset = 0.5) {
  XY <- dat$X * dat$y; off <- offset * dat$y
  w <- rep(0, dat$d)
  for (it in 1:100) {
    z <- drop(XY %*% w) + off
    s <- plogis(-z)
    g <- drop(crossprod(XY, s)) - w / prior_sd^2
    H <- -crossprod(XY * (s * (1 - s)), XY) - diag(dat$d) / prior_sd^2
    step <- solve(H, g)
    w <- w - step
    if (max(abs(step)) < 1e-12) break
  }
  list(mode = w, H = H, Sigma = solve(-H))
}

# ---------- multivariate t / Gaussian proposals ----------
# df = Inf -> Gaussian
mvt_prop <- function(mu, Sigma, df = Inf) {
  L <- t(chol(Sigma)); d <- length(mu)
  ldet <- sum(log(diag(L)))
  list(name = "mvt", d = d,
       r = function(n) {
         Z <- matrix(rnorm(n * d), n, d)
         if (is.finite(df)) Z <- Z / sqrt(rchisq(n, df) / df)
         sweep(Z %*% t(L), 2, mu, "+")
       },
       logq = function(X) {
         E <- forwardsolve(L, t(X) - mu)   # d x n
         q <- colSums(E^2)
         if (is.finite(df)) {
           lgamma((df + d) / 2) - lgamma(df / 2) - d / 2 * log(df * pi) - ldet -
             (df + d) / 2 * log1p(q / df)
         } else -d / 2 * log(2 * pi) - ldet - q / 2
       })
}

# weighted mean / cov
wmoments <- function(X, w) {
  w <- w / sum(w)
  mu <- colSums(X * w)
  Xc <- sweep(X, 2, mu)
  list(mu = mu, Sigma = crossprod(Xc * w, Xc) / (1 - sum(w^2)))
}

# ---------- independence MH ----------
run_imh <- function(prop, logpost, N = 1e5, seed = 1) {
  set.seed(seed)
  Xp <- prop$r(N)
  lw <- logpost(Xp) - prop$logq(Xp)
  cur <- 1L; idx <- integer(N); acc <- 0L
  lu <- log(runif(N))
  for (i in 1:N) {
    if (lu[i] < lw[i] - lw[cur]) { cur <- i; if (i > 1) acc <- acc + 1L }
    idx[i] <- cur
  }
  ch <- Xp[idx, , drop = FALSE]
  eb <- apply(ch, 2, ess_bulk); et <- apply(ch, 2, ess_tail)
  lag1 <- apply(ch, 2, function(v) cor(v[-1], v[-N]))
  wn <- exp(lw - max(lw))
  list(acc = acc / (N - 1), essb_min = min(eb) / N, essb_med = median(eb) / N,
       esst_min = min(et) / N, lag1_max = max(lag1),
       is_ess = sum(wn)^2 / sum(wn^2) / N)
}
fmt_res <- function(name, r) sprintf("%-34s acc=%.4f  bulkESS/N min=%.3f med=%.3f  tailESS/N min=%.3f  lag1max=%.3f  ISess/N=%.3f",
                                     name, r$acc, r$essb_min, r$essb_med, r$esst_min, r$lag1_max, r$is_ess)
