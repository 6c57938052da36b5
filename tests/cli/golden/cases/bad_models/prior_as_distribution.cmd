vbn check inputs/models/prior_as_distribution.vbn
