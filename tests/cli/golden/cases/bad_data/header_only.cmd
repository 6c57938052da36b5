vbn check examples/paper/multimodal.vbn --data inputs/data/header_only.csv
