vbn simulate examples/paper/multimodal.vbn --rows 5 --seed 1 --params inputs/data/empty.csv
