// Naive Bayes: the class k = ±1 is summed out by hand where it is missing (k = 0).
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> k[N, 1];
  int<lower=-1, upper=1> f[N, 10];
}
parameters {
  real a;
  vector[10] b;
  vector[10] w;
}
model {
  a ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  w ~ normal(0, 2.5);
  for (n in 1:N) {
    vector[2] lp = rep_vector(negative_infinity(), 2);
    for (i in 1:2) {
      int c = i == 1 ? 1 : -1;
      if (k[n, 1] == 0 || k[n, 1] == c) {
        lp[i] = log_inv_logit(c * a);
        for (j in 1:10) lp[i] += obs(f[n, j], b[j] + w[j] * c);
      }
    }
    target += cnt[n] * log_sum_exp(lp);
  }
}
