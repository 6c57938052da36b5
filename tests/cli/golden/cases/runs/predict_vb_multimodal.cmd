vbn predict examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --vb --train examples/paper/multimodal.csv --vb-draws 500 --seed 1
