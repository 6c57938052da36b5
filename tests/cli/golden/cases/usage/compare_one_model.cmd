# compare ranks two or more models: one is a usage error, before the model is even read
vbn compare examples/wells/wells.vbn --data examples/wells/wells.csv
vbn compare examples/wells/missing.vbn --data examples/wells/wells.csv
