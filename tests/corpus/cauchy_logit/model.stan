// Logistic regression with Cauchy priors (Gelman et al. 2008): the same model as model.vbn,
// over the distinct rows with their counts, y coded ±1.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 1] x;
  int<lower=-1, upper=1> y[N, 1];
}
parameters {
  real b;
  real w;
}
model {
  b ~ cauchy(0, 10);
  w ~ cauchy(0, 2.5);
  for (n in 1:N) target += cnt[n] * log_inv_logit(y[n, 1] * (b + w * x[n, 1]));
}
