vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --shards 100000 --seed 1
