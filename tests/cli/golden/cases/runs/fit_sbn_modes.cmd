# sbn_3x8's three hidden units have 48 relabellings. The first variational start stops at the
# symmetric point (ELBO -1180); the default 8 starts for a model with hidden nodes find -963.9.
# The chains still disagree (R-hat up to about 1.8), and the R-hat warning names relabelling
# and --restarts.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 200 --draws 200 --quiet
