vbn check inputs/models/unknown_prior.vbn
