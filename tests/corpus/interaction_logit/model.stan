// Logistic regression with an interaction and Cauchy priors (Gelman et al. 2008): the same
// model as model.vbn, over the distinct rows with their counts, y coded ±1.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 2] x;
  int<lower=-1, upper=1> y[N, 1];
}
parameters {
  real b;
  vector[3] w;
}
model {
  b ~ cauchy(0, 10);
  w ~ cauchy(0, 2.5);
  for (n in 1:N)
    target += cnt[n] * log_inv_logit(y[n, 1] * (b + w[1] * x[n, 1] + w[2] * x[n, 2] + w[3] * x[n, 1] * x[n, 2]));
}
