// The unimodal model U of examples/paper/unimodal_d*.vbn in Stan: y01 = (y+1)/2, X in {-1,+1}, logit P(y=+1 | x) = alpha + x'theta
data {
  int<lower=1> T;
  int<lower=1> d;
  matrix[T, d] X;
  int<lower=0, upper=1> y01[T];
  real alpha;
  real<lower=0> prior_sd;
}
parameters {
  vector[d] theta;
}
model {
  theta ~ normal(0, prior_sd);
  y01 ~ bernoulli_logit_glm(X, alpha, theta);
}
