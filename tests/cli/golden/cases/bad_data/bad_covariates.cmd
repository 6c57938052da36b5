# covariates may not be missing and must be numbers
vbn check examples/wells/wells.vbn --data inputs/data/bad_covariates.csv
