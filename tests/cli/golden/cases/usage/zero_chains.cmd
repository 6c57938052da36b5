vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --chains 0 --seed 1
