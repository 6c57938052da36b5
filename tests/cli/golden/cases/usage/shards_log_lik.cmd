vbn fit examples/wells/wells.vbn --data examples/wells/wells.csv --shards 4 --log-lik --output fit.csv --seed 1
