# every command that takes --seed refuses a negative one
vbn vb examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed -3
