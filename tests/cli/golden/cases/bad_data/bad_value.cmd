vbn check examples/paper/multimodal.vbn --data inputs/data/bad_value.csv
