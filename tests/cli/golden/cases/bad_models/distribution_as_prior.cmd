vbn check inputs/models/distribution_as_prior.vbn
