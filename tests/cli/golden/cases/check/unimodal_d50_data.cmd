vbn check examples/paper/unimodal_d50.vbn --data examples/paper/unimodal_d50.csv
