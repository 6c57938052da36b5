// Responder trial: hidden r = ±1 summed out by hand, with the interaction r * t in the
// outcomes; distinct rows with counts. t's own term is the constant log 0.5 and is left out.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 1] x;
  int<lower=-1, upper=1> t[N, 1];
  int<lower=-1, upper=1> m[N, 3];          // +1, -1; 0 = missing
  int<lower=-1, upper=1> y[N, 2];
}
parameters {
  real a;
  real u;
  vector[3] c;
  vector[3] v;
  vector[2] b;
  matrix[2, 3] w;
}
model {
  a ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  c ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  to_vector(w) ~ normal(0, 2.5);
  v ~ normal(1.5, 1);
  for (n in 1:N) {
    vector[2] lp;
    for (i in 1:2) {
      int r = i == 1 ? 1 : -1;
      lp[i] = log_inv_logit(r * (a + u * x[n, 1]));
      for (j in 1:3) lp[i] += obs(m[n, j], c[j] + v[j] * r);
      for (k in 1:2)
        lp[i] += obs(y[n, k], b[k] + w[k, 1] * r + w[k, 2] * t[n, 1] + w[k, 3] * r * t[n, 1]);
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
