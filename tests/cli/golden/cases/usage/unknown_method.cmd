vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --method bogus --seed 1
