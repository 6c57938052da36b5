# --target already given and still beyond the limit: the message does not suggest --target
vbn predict examples/wide/wide.vbn --data examples/wide/wide.csv --vb --train examples/wide/wide.csv --target 'y[2]' --seed 1
