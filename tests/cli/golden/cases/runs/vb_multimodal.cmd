vbn vb examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1
