// Latent class with a learned intercept scale: hidden c = ±1 summed out by hand, eight items
// with intercepts b ~ N(0, tau^2), tau ~ half-Cauchy(1), loadings v ~ N(1.5, 1). Centred: with
// about 270 answers an item the centred form ran without a divergence (the non-centred
// b = tau * b_raw gave none either, at a third of tau's ESS; README.md). Distinct rows with
// counts, missing answers skipped.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> y[N, 8];          // +1, -1; 0 = missing
}
parameters {
  real a;
  vector[8] b;
  real<lower=0> tau;
  vector[8] v;
}
model {
  a ~ normal(0, 2.5);
  b ~ normal(0, tau);
  tau ~ cauchy(0, 1);                      // half-Cauchy(1): the bound makes it so
  v ~ normal(1.5, 1);
  for (n in 1:N) {
    vector[2] lp;
    for (i in 1:2) {
      int c = i == 1 ? 1 : -1;
      lp[i] = log_inv_logit(c * a);
      for (k in 1:8) lp[i] += obs(y[n, k], b[k] + v[k] * c);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
