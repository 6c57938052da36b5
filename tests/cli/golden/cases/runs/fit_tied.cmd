# Occupancy with one detection rate (examples/tied): the block that y[1..4] share, sampled by
# auto's choice, and the same model's vb.
vbn fit examples/tied/occupancy.vbn --data examples/tied/occupancy.csv --seed 2 --chains 4 --warmup 500 --draws 500 --threads 1 --quiet
vbn vb examples/tied/occupancy.vbn --data examples/tied/occupancy.csv --seed 2
