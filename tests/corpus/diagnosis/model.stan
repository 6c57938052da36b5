// Two hidden diseases (prevalences 0.1 and 0.3) summed out by hand; distinct rows with counts.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> s[N, 6];          // +1, -1; 0 = missing
}
parameters {
  vector[6] b;
  vector[6] u;
  vector[6] v;
}
model {
  b ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  v ~ normal(0, 2.5);
  for (n in 1:N) {
    vector[4] lp;
    int i = 1;
    for (d1 in {-1, 1}) for (d2 in {-1, 1}) {
      lp[i] = log(d1 == 1 ? 0.1 : 0.9) + log(d2 == 1 ? 0.3 : 0.7);
      for (k in 1:6) lp[i] += obs(s[n, k], b[k] + u[k] * d1 + v[k] * d2);
      i += 1;
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
