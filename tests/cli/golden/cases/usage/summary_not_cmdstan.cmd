vbn summary examples/paper/multimodal.csv
