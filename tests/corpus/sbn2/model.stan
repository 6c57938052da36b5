// Two-layer sigmoid belief network: t[2] (P = 0.5) and h[3] summed out by hand (32 states).
functions {
  real obs(int y, real eta) { return y == 0 ? 0 : log_inv_logit(y * eta); }
}
data {
  int<lower=1> N;
  int<lower=1> cnt[N];
  int<lower=-1, upper=1> v[N, 8];          // +1, -1; 0 = missing
}
transformed data {
  matrix[4, 2] T;                          // the four top states
  matrix[8, 3] H;                          // the eight feature states
  for (i in 1:4) { T[i, 1] = i <= 2 ? 1 : -1; T[i, 2] = i % 2 == 1 ? 1 : -1; }
  for (i in 1:8) {
    int p = 1;                             // 2^(j - 1): bit j - 1 of i - 1 gives feature j
    for (j in 1:3) { H[i, j] = ((i - 1) / p) % 2 == 0 ? 1 : -1; p *= 2; }
  }
}
parameters {
  vector[3] c;
  matrix[3, 2] U;
  vector[8] b;
  matrix[8, 3] W;
}
model {
  matrix[4, 8] lph;                        // log p(h | t) per top state and feature state
  matrix[8, 8] eta = rep_matrix(b', 8) + H * W';   // logits of v per feature state
  c ~ normal(0, 2.5);
  to_vector(U) ~ normal(0, 2.5);
  b ~ normal(0, 2.5);
  to_vector(W) ~ normal(0, 2.5);
  for (i in 1:4) {
    vector[3] e = c + U * T[i]';
    for (l in 1:8) lph[i, l] = log(0.25) + sum(log_inv_logit(H[l]' .* e));
  }
  for (n in 1:N) {
    vector[8] lv;
    vector[32] lp;
    for (l in 1:8) {
      lv[l] = 0;
      for (k in 1:8) lv[l] += obs(v[n, k], eta[l, k]);
    }
    for (i in 1:4) for (l in 1:8) lp[(i - 1) * 8 + l] = lph[i, l] + lv[l];
    target += cnt[n] * log_sum_exp(lp);
  }
}
