vbn check examples/wide/wide.vbn --data examples/wide/wide.csv
