# The rows dealt into 4 shards in one process (docs/mpi.md): auto takes NUTS and says why;
# the same draws as under mpirun with any number of ranks (scripts/test-mpi.sh). Seed 3: at
# seed 1 the mean of a, 0.0055605007, sat 7e-11 above a rounding edge of its four printed
# digits, and printed 0.00556 on one CPU and 0.005561 on another.
vbn fit examples/wells/wells.vbn --data examples/wells/wells.csv --shards 4 --seed 3 --warmup 200 --draws 200 --threads 1
