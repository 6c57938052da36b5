vbn check examples/paper/unimodal_d5.vbn --data examples/paper/unimodal_d5.csv
