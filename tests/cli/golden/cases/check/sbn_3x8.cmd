vbn check examples/paper/sbn_3x8.vbn
