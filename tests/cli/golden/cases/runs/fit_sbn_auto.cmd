# auto on sbn_3x8 (hidden nodes coupling 32 weights): the variational proposal fails its pilot
# check (k-hat above 0.5), so auto takes nuts and says why before the chains start.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 100 --draws 100 --threads 1
