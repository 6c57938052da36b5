vbn predict examples/paper/multimodal.vbn --data examples/paper/multimodal.csv
