// Occupancy with one detection rate: hidden z = ±1 summed out by hand, one intercept c and
// one slope v shared by the five visits; distinct rows with counts, missing visits skipped.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 2] x;
  int<lower=-1, upper=1> y[N, 5];          // +1, -1; 0 = missing
}
parameters {
  real a;
  vector[2] u;
  real c;
  real v;
}
model {
  vector[N] eta = a + x * u;
  a ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  c ~ normal(0, 2.5);
  v ~ normal(1.5, 0.5);
  for (n in 1:N) {
    vector[2] lp;
    for (i in 1:2) {
      int z = i == 1 ? 1 : -1;
      lp[i] = log_inv_logit(z * eta[n]);
      for (j in 1:5) lp[i] += obs(y[n, j], c + v * z);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
