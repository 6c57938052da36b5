vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed abc
