vbn simulate examples/paper/multimodal.vbn --rows 0 --seed 1
