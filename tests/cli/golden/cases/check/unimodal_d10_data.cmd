vbn check examples/paper/unimodal_d10.vbn --data examples/paper/unimodal_d10.csv
