# sbn_3x8's three hidden units have 48 relabellings. With varmix asked for by name, the
# variational proposal's pilot k-hat (above 0.5) is said before the chains; they stick and
# disagree (R-hat far above 1.1). The draws, relabelled to one labeling, show that the chains
# sit in different modes, not labelings, and the R-hat warning says so and names --restarts.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 200 --draws 200 --method varmix --threads 1
