// Three-step hidden chain: h1, h2, h3 = ±1 summed out by hand (8 states); counts per row.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> y1[N, 3];         // +1, -1; 0 = missing
  int<lower=-1, upper=1> y2[N, 3];
  int<lower=-1, upper=1> y3[N, 3];
}
parameters {
  real t1; real p1; real t2; real p2;
  vector[3] b1; vector[3] b2; vector[3] b3;
  vector[3] e1; vector[3] e2; vector[3] e3;
}
model {
  t1 ~ normal(0, 2.5); p1 ~ normal(0, 2.5); t2 ~ normal(0, 2.5); p2 ~ normal(0, 2.5);
  b1 ~ normal(0, 2.5); b2 ~ normal(0, 2.5); b3 ~ normal(0, 2.5);
  e1 ~ normal(1.5, 1); e2 ~ normal(1.5, 1); e3 ~ normal(1.5, 1);
  for (n in 1:N) {
    vector[8] lp;
    int i = 1;
    for (h1 in {-1, 1}) for (h2 in {-1, 1}) for (h3 in {-1, 1}) {
      lp[i] = log(0.5) + log_inv_logit(h2 * (t1 + p1 * h1)) + log_inv_logit(h3 * (t2 + p2 * h2));
      for (j in 1:3) lp[i] += obs(y1[n, j], b1[j] + e1[j] * h1)
                            + obs(y2[n, j], b2[j] + e2[j] * h2)
                            + obs(y3[n, j], b3[j] + e3[j] * h3);
      i += 1;
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
