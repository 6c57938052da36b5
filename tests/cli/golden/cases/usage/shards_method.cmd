vbn fit examples/wells/wells.vbn --data examples/wells/wells.csv --shards 4 --method varblock --seed 1
