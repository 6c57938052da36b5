vbn check examples/paper/unimodal_d5.vbn
