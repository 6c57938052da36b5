vbn check examples/paper/multimodal.vbn --data inputs/data/empty.csv
