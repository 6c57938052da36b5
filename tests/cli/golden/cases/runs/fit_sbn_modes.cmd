# sbn_3x8's three hidden units have 48 relabellings. With varmix asked for by name, the
# variational proposal's pilot k-hat (above 0.5) is said before the chains; they stick and
# disagree (R-hat far above 1.1), and the R-hat warning names relabelling and --restarts.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 200 --draws 200 --method varmix --threads 1
