# Weighs the copies of the diagnosis network's major mode that a sign flip or an exchange of
# the two diseases maps it to: each copy's own local mode (optimizing() started at the mapped
# major mode) and its Laplace mass relative to the major mode,
#   log(P_copy / P_major) ~ (lp_copy - lp_major) - (log|H_copy| - log|H_major|) / 2,
# H the negative Hessian of the log density at each mode (Stan's unconstrained scale; every
# parameter here is unconstrained). A copy whose start falls back to the major mode is no
# separate mode. Usage: nice -n 10 Rscript tests/corpus/diagnosis_copies.R
# Stan's model codes the diseases +1/-1, so a flip of d_k negates its weights alone.
here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(here, "stan_setup.R"))
use_debian_bh()
suppressMessages(library(rstan))
source(file.path(here, "corpus_data.R"))
data <- read_corpus_data(file.path(here, "diagnosis", "data.csv"))
sm <- stan_model(file.path(here, "diagnosis", "model.stan"))
starts <- lapply(1:8, function(i) optimizing(sm, data = data, seed = i, init = "random", as_vector = FALSE))
cat("modes from 8 random starts (log density):", sort(round(sapply(starts, `[[`, "value"), 3)), "\n")
best <- starts[[which.max(sapply(starts, `[[`, "value"))]]$par
laplace <- function(init) {
  o <- optimizing(sm, data = data, init = init, hessian = TRUE, as_vector = FALSE)
  list(value = o$value, par = unlist(o$par),
       logdet = as.numeric(determinant(-o$hessian, logarithm = TRUE)$modulus))
}
major <- laplace(best)
copies <- list("flip d1" = list(b = best$b, u = -best$u, v = best$v),
               "flip d2" = list(b = best$b, u = best$u, v = -best$v),
               "flip d1 + d2" = list(b = best$b, u = -best$u, v = -best$v),
               "exchange d1, d2" = list(b = best$b, u = best$v, v = best$u),
               "exchange, flip d1" = list(b = best$b, u = -best$v, v = best$u),
               "exchange, flip d2" = list(b = best$b, u = best$v, v = -best$u),
               "exchange, flip both" = list(b = best$b, u = -best$v, v = -best$u))
cat(sprintf("major mode: log density %.3f\n", major$value))
for (name in names(copies)) {
  m <- laplace(copies[[name]])
  away <- max(abs(m$par - major$par))
  if (away < 0.01) {
    cat(sprintf("%-20s falls back to the major mode: no separate mode\n", name))
    next
  }
  lr <- (m$value - major$value) - 0.5 * (m$logdet - major$logdet)
  cat(sprintf("%-20s local mode %.3f (%.3f below), log mass ratio %.2f (%.2g)\n",
              name, m$value, major$value - m$value, lr, exp(lr)))
}
