vbn simulate examples/paper/multimodal.vbn --rows 10 --seed 7
