# compare --by loo: both models fitted with the default method, ranked by elpd_loo with
# loo_compare's differences; the warning names the outlier row of the model with z
vbn compare inputs/loo/outlier.vbn inputs/loo/intercept.vbn --data inputs/loo/outlier.csv --by loo --seed 1
