// The unimodal model U of examples/paper/unimodal_d*.vbn in Stan over the distinct rows of x:
// row i of X occurs n[i] times, k[i] of them with y = +1, so the likelihood is
// prod_i Binomial(k[i] | n[i], inv_logit(alpha + X[i] theta)) (up to a constant, the same
// posterior as U.stan's row-by-row Bernoulli terms, with one term per distinct row).
data {
  int<lower=1> N;
  int<lower=1> d;
  matrix[N, d] X;
  int<lower=1> n[N];
  int<lower=0> k[N];
  real alpha;
  real<lower=0> prior_sd;
}
parameters {
  vector[d] theta;
}
model {
  theta ~ normal(0, prior_sd);
  k ~ binomial_logit(n, alpha + X * theta);
}
