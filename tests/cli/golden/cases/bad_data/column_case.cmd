vbn check examples/paper/multimodal.vbn --data inputs/data/column_case.csv
