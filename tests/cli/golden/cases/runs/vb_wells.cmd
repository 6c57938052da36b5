vbn vb examples/wells/wells.vbn --data examples/wells/wells.csv --seed 1
