// The multimodal model of examples/paper/multimodal.vbn in Stan, the hidden parent h summed out per row:
// p(y|o,theta) = sum_h P(h) inv_logit(y*(alpha + theta[1]*h + theta[2]*o))
data {
  int<lower=1> T;
  vector[T] o;
  vector[T] y;
  real alpha;
  real<lower=0, upper=1> ph;
  real prior_mean;
  real<lower=0> prior_sd;
}
parameters {
  vector[2] theta;   // theta[1] = weight of hidden h, theta[2] = weight of observed o
}
model {
  vector[T] base = alpha + theta[2] * o;
  theta ~ normal(prior_mean, prior_sd);
  for (t in 1:T)
    target += log_sum_exp(log(ph) + log_inv_logit(y[t] * (base[t] + theta[1])),
                          log1m(ph) + log_inv_logit(y[t] * (base[t] - theta[1])));
}
