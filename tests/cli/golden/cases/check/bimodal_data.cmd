vbn check examples/paper/bimodal.vbn --data examples/paper/bimodal.csv
