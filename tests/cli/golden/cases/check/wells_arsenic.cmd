vbn check examples/wells/wells_arsenic.vbn
