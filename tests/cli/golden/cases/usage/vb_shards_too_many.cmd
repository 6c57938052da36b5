vbn vb examples/wells/wells.vbn --data examples/wells/wells.csv --shards 100000 --seed 1
