# fit --log-lik writes log_lik.1 … log_lik.16; loo's table, k̂ bins and the warning naming
# the outlying row 16 (k̂ > 0.7)
vbn fit inputs/loo/outlier.vbn --data inputs/loo/outlier.csv --seed 1 --quiet --log-lik --chains 4 --warmup 200 --draws 250 --output o.csv
vbn loo o_1.csv o_2.csv o_3.csv o_4.csv
