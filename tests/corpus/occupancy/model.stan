// Occupancy: hidden z = ±1 with covariates summed out by hand; distinct rows with counts.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 2] x;
  int<lower=-1, upper=1> y[N, 4];          // +1, -1; 0 = missing
}
parameters {
  real a;
  vector[2] u;
  vector[4] c;
  vector[4] v;
}
model {
  vector[N] eta = a + x * u;
  a ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  c ~ normal(0, 2.5);
  v ~ normal(1.5, 1);
  for (n in 1:N) {
    vector[2] lp;
    for (i in 1:2) {
      int z = i == 1 ? 1 : -1;
      lp[i] = log_inv_logit(z * eta[n]);
      for (j in 1:4) lp[i] += obs(y[n, j], c[j] + v[j] * z);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
