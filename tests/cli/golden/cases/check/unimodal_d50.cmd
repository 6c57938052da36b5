vbn check examples/paper/unimodal_d50.vbn
