vbn check examples/paper/multimodal.vbn --data nope.csv
