// Tied tests: hidden d = ±1 summed out by hand; one sensitivity s in both tests; symptom
// weights r on [d, t1] shared by the three symptoms. t1 is q's parent, so where t1 is missing
// it is summed out too (both values, with its own factor); missing leaves are skipped.
// Distinct rows with counts.
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 1] age;
  int<lower=-1, upper=1> t1[N, 1];         // +1, -1; 0 = missing
  int<lower=-1, upper=1> t2[N, 1];
  int<lower=-1, upper=1> q[N, 3];
}
parameters {
  real a;
  real u;
  real b1;
  real b2;
  real s;
  vector[3] c;
  vector[2] r;
}
model {
  a ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  b1 ~ normal(0, 2.5);
  b2 ~ normal(0, 2.5);
  c ~ normal(0, 2.5);
  r ~ normal(0, 2.5);
  s ~ normal(1.5, 0.5);
  for (n in 1:N) {
    vector[4] lp = rep_vector(negative_infinity(), 4);   // (d, t1) configurations
    for (i in 1:2) {
      int d = i == 1 ? 1 : -1;
      real base = log_inv_logit(d * (a + u * age[n, 1])) + obs(t2[n, 1], b2 + s * d);
      for (k in 1:2) {
        int t = k == 1 ? 1 : -1;
        if (t1[n, 1] == 0 || t1[n, 1] == t) {
          lp[2 * (i - 1) + k] = base + log_inv_logit(t * (b1 + s * d));
          for (j in 1:3) lp[2 * (i - 1) + k] += obs(q[n, j], c[j] + r[1] * d + r[2] * t);
        }
      }
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
