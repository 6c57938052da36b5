vbn check examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv
