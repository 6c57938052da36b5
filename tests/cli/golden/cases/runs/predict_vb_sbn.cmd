vbn predict examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --vb --train examples/paper/sbn_3x8.csv --restarts 4 --target 'v[1]' --output pred.csv --seed 1
