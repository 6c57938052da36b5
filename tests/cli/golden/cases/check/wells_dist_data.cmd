# wells.csv has a column (arsenic) that wells_dist.vbn does not use: a notice
vbn check examples/wells/wells_dist.vbn --data examples/wells/wells.csv
