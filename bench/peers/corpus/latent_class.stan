// A latent class behind K yes/no items (tests/corpus survey and housevotes), written for speed:
// the same posterior as their model.stan, with the items' log-likelihoods as two
// matrix-vector products per class instead of a loop over rows and items.
data {
  int<lower=1> N;
  int<lower=1> K;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> y[N, K];         // +1, -1; 0 = missing
}
transformed data {
  matrix[N, K] pos = rep_matrix(0, N, K);  // 1 where y = +1
  matrix[N, K] neg = rep_matrix(0, N, K);  // 1 where y = -1
  vector[N] n = to_vector(cnt);
  for (i in 1:N) for (k in 1:K) { pos[i, k] = y[i, k] == 1; neg[i, k] = y[i, k] == -1; }
}
parameters {
  real a;
  vector[K] b;
  vector[K] w;
}
model {
  vector[N] l1 = pos * log_inv_logit(b + w) + neg * log_inv_logit(-b - w) + log_inv_logit(a);
  vector[N] l0 = pos * log_inv_logit(b - w) + neg * log_inv_logit(w - b) + log_inv_logit(-a);
  vector[N] ll;
  a ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  w ~ normal(0, 2.5);
  for (i in 1:N) ll[i] = log_sum_exp(l1[i], l0[i]);
  target += dot_product(n, ll);
}
