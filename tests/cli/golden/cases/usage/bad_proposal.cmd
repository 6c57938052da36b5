vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --proposal prior --seed 1
