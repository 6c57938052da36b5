// tests/corpus/diagnosis written for speed: the same posterior as its model.stan, with the
// symptoms' log-likelihoods as matrix-vector products per configuration of the two diseases.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> s[N, 6];          // +1, -1; 0 = missing
}
transformed data {
  matrix[N, 6] pos = rep_matrix(0, N, 6);  // 1 where s = +1
  matrix[N, 6] neg = rep_matrix(0, N, 6);  // 1 where s = -1
  vector[N] n = to_vector(cnt);
  vector[4] d1 = [-1, -1, 1, 1]';
  vector[4] d2 = [-1, 1, -1, 1]';
  vector[4] prior;                         // log p(d1, d2): prevalences 0.1 and 0.3
  for (i in 1:N) for (k in 1:6) { pos[i, k] = s[i, k] == 1; neg[i, k] = s[i, k] == -1; }
  for (c in 1:4) prior[c] = log(d1[c] == 1 ? 0.1 : 0.9) + log(d2[c] == 1 ? 0.3 : 0.7);
}
parameters {
  vector[6] b;
  vector[6] u;
  vector[6] v;
}
model {
  matrix[N, 4] lp;
  vector[N] ll;
  b ~ normal(0, 2.5);
  u ~ normal(0, 2.5);
  v ~ normal(0, 2.5);
  for (c in 1:4) {
    vector[6] eta = b + u * d1[c] + v * d2[c];
    lp[, c] = pos * log_inv_logit(eta) + neg * log_inv_logit(-eta) + prior[c];
  }
  for (i in 1:N) ll[i] = log_sum_exp(lp[i]);
  target += dot_product(n, ll);
}
