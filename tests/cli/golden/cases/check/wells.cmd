vbn check examples/wells/wells.vbn
