// Two-layer sigmoid belief network: t[2] (P = 0.5) and h[3] summed out by hand (32 states),
// over the distinct rows with their counts. The visible units' log-likelihood per feature
// state is two matrix products with the rows' +1 and -1 indicators, so each gradient takes
// 128 log_inv_logit terms, not one per row, state and unit.
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> v[N, 8];          // +1, -1; 0 = missing
}
transformed data {
  matrix[4, 2] T;                          // the four top states
  matrix[8, 3] H;                          // the eight feature states
  matrix[N, 8] pos = rep_matrix(0, N, 8);  // 1 where v = +1
  matrix[N, 8] neg = rep_matrix(0, N, 8);  // 1 where v = -1
  vector[N] w = to_vector(cnt);
  for (i in 1:4) { T[i, 1] = i <= 2 ? 1 : -1; T[i, 2] = i % 2 == 1 ? 1 : -1; }
  for (i in 1:8) {
    int p = 1;                             // 2^(j - 1): bit j - 1 of i - 1 gives feature j
    for (j in 1:3) { H[i, j] = ((i - 1) / p) % 2 == 0 ? 1 : -1; p *= 2; }
  }
  for (n in 1:N) for (k in 1:8) { pos[n, k] = v[n, k] == 1; neg[n, k] = v[n, k] == -1; }
}
parameters {
  vector[3] c;
  matrix[3, 2] U;
  vector[8] b;
  matrix[8, 3] W;
}
model {
  matrix[8, 8] eta = rep_matrix(b', 8) + H * W';   // logits of v (columns) per feature state (rows)
  matrix[N, 8] lv = pos * log_inv_logit(eta)' + neg * log_inv_logit(-eta)';  // log p(v_n | h = l)
  vector[32] lph;                                  // log p(t = i, h = l)
  vector[N] ll;
  c ~ normal(0, 2.5);
  to_vector(U) ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  to_vector(W) ~ normal(0, 2.5);
  for (i in 1:4) {
    vector[3] e = c + U * T[i]';
    for (l in 1:8) lph[(i - 1) * 8 + l] = log(0.25) + sum(log_inv_logit(H[l]' .* e));
  }
  for (n in 1:N) {
    vector[32] lp;
    for (i in 1:4) lp[((i - 1) * 8 + 1):(i * 8)] = lph[((i - 1) * 8 + 1):(i * 8)] + lv[n]';
    ll[n] = log_sum_exp(lp);
  }
  target += dot_product(w, ll);
}
