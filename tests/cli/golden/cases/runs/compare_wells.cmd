vbn compare examples/wells/wells.vbn examples/wells/wells_dist.vbn --data examples/wells/wells.csv --seed 1
