vbn check inputs/models/unknown_distribution.vbn
