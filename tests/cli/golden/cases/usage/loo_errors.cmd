# loo refuses files without log_lik columns, chains of different fits, non-finite values,
# --log-lik without --output, and --log-lik where a row has more unobserved values than can be
# summed out (no advice to use gibbs: the values must be summed out whatever the method)
vbn fit examples/paper/unimodal_d1.vbn --data examples/paper/unimodal_d1.csv --seed 1 --quiet --chains 1 --warmup 50 --draws 20 --output plain.csv
vbn loo plain_1.csv
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1 --quiet --chains 1 --warmup 50 --draws 20 --log-lik --output a.csv
vbn fit inputs/loo/outlier.vbn --data inputs/loo/outlier.csv --seed 1 --quiet --chains 1 --warmup 50 --draws 20 --log-lik --output b.csv
vbn loo a_1.csv b_1.csv
vbn loo inputs/loo/nonfinite_1.csv
vbn loo
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1 --log-lik
vbn fit examples/wide/wide.vbn --data examples/wide/wide.csv --seed 1 --quiet --log-lik --output wide.csv
