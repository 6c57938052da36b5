vbn check examples/paper/unimodal_d1.vbn
