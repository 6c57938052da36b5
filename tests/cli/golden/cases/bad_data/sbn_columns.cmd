# an array's columns are v[1] .. v[8] (or v.1); a column for a hidden node is refused
vbn check examples/paper/sbn_3x8.vbn --data inputs/data/sbn_columns.csv
