// tests/corpus/occupancy written for speed: the same posterior as its model.stan, with the
// visits' log-likelihoods as matrix-vector products per state of the hidden presence z.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  matrix[N, 2] x;
  int<lower=-1, upper=1> y[N, 4];          // +1, -1; 0 = missing
}
transformed data {
  matrix[N, 4] pos = rep_matrix(0, N, 4);  // 1 where y = +1
  matrix[N, 4] neg = rep_matrix(0, N, 4);  // 1 where y = -1
  vector[N] n = to_vector(cnt);
  for (i in 1:N) for (j in 1:4) { pos[i, j] = y[i, j] == 1; neg[i, j] = y[i, j] == -1; }
}
parameters {
  real a;
  vector[2] u;
  vector[4] c;
  vector[4] v;
}
model {
  vector[N] eta = a + x * u;
  vector[N] l1 = log_inv_logit(eta) + pos * log_inv_logit(c + v) + neg * log_inv_logit(-c - v);
  vector[N] l0 = log_inv_logit(-eta) + pos * log_inv_logit(c - v) + neg * log_inv_logit(v - c);
  vector[N] ll;
  a ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  c ~ normal(0, 2.5);
  v ~ normal(1.5, 1);
  for (i in 1:N) ll[i] = log_sum_exp(l1[i], l0[i]);
  target += dot_product(n, ll);
}
