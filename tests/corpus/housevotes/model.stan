// Latent-class model: one hidden class c = ±1 summed out by hand; distinct rows with counts.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> v[N, 16];         // +1, -1; 0 = missing
}
parameters {
  real a;
  vector[16] b;
  vector[16] w;
}
model {
  a ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  w ~ normal(0, 2.5);
  for (n in 1:N) {
    vector[2] lp;
    for (i in 1:2) {
      int c = i == 1 ? 1 : -1;
      lp[i] = log_inv_logit(c * a);
      for (k in 1:16) lp[i] += obs(v[n, k], b[k] + w[k] * c);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
