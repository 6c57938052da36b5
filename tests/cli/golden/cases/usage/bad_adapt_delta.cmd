vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --adapt-delta 1.5 --seed 1
