// Latent-class model: one hidden class c = ±1 summed out by hand; distinct rows with counts.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> q[N, 8];         // +1, -1; 0 = missing
}
parameters {
  real a;
  vector[8] b;
  vector[8] w;
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
      for (k in 1:8) lp[i] += obs(q[n, k], b[k] + w[k] * c);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
