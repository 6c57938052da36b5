# no importance correction beyond the enumeration limit: the note names a remedy of another command
vbn vb examples/wide/wide.vbn --data examples/wide/wide.csv --seed 1
