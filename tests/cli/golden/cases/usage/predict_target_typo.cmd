# --target naming no node: the closest node is suggested
vbn predict examples/wide/wide.vbn --data examples/wide/wide.csv --vb --train examples/wide/wide.csv --target 'y[2'
