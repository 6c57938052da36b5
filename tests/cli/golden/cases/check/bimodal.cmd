vbn check examples/paper/bimodal.vbn
