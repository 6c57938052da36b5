vbn check examples/paper/unimodal_d10.vbn
