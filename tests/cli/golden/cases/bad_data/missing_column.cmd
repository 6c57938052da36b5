vbn check examples/paper/multimodal.vbn --data inputs/data/missing_column.csv
