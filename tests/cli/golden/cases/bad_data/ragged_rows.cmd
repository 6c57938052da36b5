vbn check examples/paper/multimodal.vbn --data inputs/data/ragged_rows.csv
