# wells.csv has a column (dist100) that wells_arsenic.vbn does not use: a notice
vbn check examples/wells/wells_arsenic.vbn --data examples/wells/wells.csv
