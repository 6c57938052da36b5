// The paper's sigmoid belief network: h[3] (P = 0.5 each) summed out by hand (8 states),
// over the distinct rows with their counts. The visible units' log-likelihood per hidden
// state is two matrix products with the rows' +1 and -1 indicators.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> v[N, 8];          // +1, -1; 0 = missing
}
transformed data {
  matrix[8, 3] H;                          // the eight hidden states
  matrix[N, 8] pos = rep_matrix(0, N, 8);  // 1 where v = +1
  matrix[N, 8] neg = rep_matrix(0, N, 8);  // 1 where v = -1
  vector[N] w = to_vector(cnt);
  for (i in 1:8) {
    int p = 1;                             // 2^(j - 1): bit j - 1 of i - 1 gives unit j
    for (j in 1:3) { H[i, j] = ((i - 1) / p) % 2 == 0 ? 1 : -1; p *= 2; }
  }
  for (n in 1:N) for (k in 1:8) { pos[n, k] = v[n, k] == 1; neg[n, k] = v[n, k] == -1; }
}
parameters {
  vector[8] b;
  matrix[8, 3] W;
}
model {
  matrix[8, 8] eta = rep_matrix(b', 8) + H * W';   // logits of v (columns) per hidden state (rows)
  matrix[N, 8] lv = pos * log_inv_logit(eta)' + neg * log_inv_logit(-eta)';  // log p(v_n | h = l)
  vector[N] ll;
  b ~ normal(0, sqrt(10));
  to_vector(W) ~ normal(0, sqrt(10));
  for (n in 1:N) ll[n] = log_sum_exp(lv[n]') + 3 * log(0.5);
  target += dot_product(w, ll);
}
