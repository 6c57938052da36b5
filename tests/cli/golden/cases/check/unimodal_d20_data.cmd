vbn check examples/paper/unimodal_d20.vbn --data examples/paper/unimodal_d20.csv
