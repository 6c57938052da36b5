// The multimodal model of examples/paper/multimodal.vbn in Stan over the distinct rows (o, y),
// row i occurring cnt[i] times; the hidden parent h is summed out per distinct row:
// log p = sum_i cnt[i] log sum_h P(h) inv_logit(y[i] (alpha + theta[1] h + theta[2] o[i])).
data {
  int<lower=1> N;
  vector[N] o;
  vector[N] y;
  vector<lower=1>[N] cnt;
  real alpha;
  real<lower=0, upper=1> ph;
  real prior_mean;
  real<lower=0> prior_sd;
}
parameters {
  vector[2] theta;   // theta[1] = weight of hidden h, theta[2] = weight of observed o
}
model {
  vector[N] base = alpha + theta[2] * o;
  vector[N] lp;
  theta ~ normal(prior_mean, prior_sd);
  for (i in 1:N)
    lp[i] = log_sum_exp(log(ph) + log_inv_logit(y[i] * (base[i] + theta[1])),
                        log1m(ph) + log_inv_logit(y[i] * (base[i] - theta[1])));
  target += dot_product(cnt, lp);
}
