vbn check examples/paper/multimodal.vbn --data inputs/data/extra_and_missing.csv
