vbn check examples/paper/unimodal_d1.vbn --data examples/paper/unimodal_d1.csv
