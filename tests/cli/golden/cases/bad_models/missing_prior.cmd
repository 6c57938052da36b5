vbn check inputs/models/missing_prior.vbn
