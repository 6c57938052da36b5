vbn check examples/wide/wide.vbn
