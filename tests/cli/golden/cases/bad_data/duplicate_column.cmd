vbn check examples/paper/multimodal.vbn --data inputs/data/duplicate_column.csv
