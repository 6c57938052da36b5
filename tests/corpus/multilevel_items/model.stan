// Twelve items, one shared slope w on x, intercepts b ~ N(0, tau^2) with tau ~ half-normal(1).
// Centred: with about 57 answers an item the data pin each b, and the centred form ran without
// a divergence (the non-centred b = tau * b_raw gave none either, at a fifth of tau's ESS;
// README.md). Distinct rows with counts, missing answers skipped.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 1] x;
  int<lower=-1, upper=1> y[N, 12];         // +1, -1; 0 = missing
}
parameters {
  vector[12] b;
  real<lower=0> tau;
  real w;
}
model {
  b ~ normal(0, tau);
  tau ~ normal(0, 1);                      // half-normal(1): the bound makes it so
  w ~ normal(0, 2.5);
  for (n in 1:N) {
    real lp = 0;
    for (k in 1:12) lp += obs(y[n, k], b[k] + w * x[n, 1]);
    target += cnt[n] * lp;
  }
}
