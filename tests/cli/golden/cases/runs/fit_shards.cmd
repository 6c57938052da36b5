# The rows dealt into 4 shards in one process (docs/mpi.md): auto takes NUTS and says why;
# the same draws as under mpirun with any number of ranks (scripts/test-mpi.sh).
vbn fit examples/wells/wells.vbn --data examples/wells/wells.csv --shards 4 --seed 1 --warmup 200 --draws 200 --threads 1
