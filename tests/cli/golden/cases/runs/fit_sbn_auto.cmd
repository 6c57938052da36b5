# auto on sbn_3x8 (hidden nodes coupling 32 weights): with no exact proposal per block, varmix
# would move one block at a time from the variational fit, so auto takes nuts and says why
# before the chains start.
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --seed 1 --warmup 100 --draws 100 --threads 1
