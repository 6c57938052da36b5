vbn check inputs/models/not_positive_definite.vbn
