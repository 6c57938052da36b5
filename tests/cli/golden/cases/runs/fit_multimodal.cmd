vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1 --quiet --warmup 200 --draws 200
