# --target naming an array node: its elements are listed
vbn predict examples/wide/wide.vbn --data examples/wide/wide.csv --vb --train examples/wide/wide.csv --target y
