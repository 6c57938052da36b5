vbn check inputs/models/covariate_with_distribution.vbn
