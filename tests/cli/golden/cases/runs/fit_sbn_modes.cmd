# sbn_3x8's three hidden units have 48 relabellings: the chains land in different ones, and
# the R-hat warning says so and names --restarts; the independence kernel's 0% acceptance
# names the method to try.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 200 --draws 200 --quiet
