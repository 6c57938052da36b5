vbn check examples/paper/unimodal_d20.vbn
