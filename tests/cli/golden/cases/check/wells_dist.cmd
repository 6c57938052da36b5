vbn check examples/wells/wells_dist.vbn
