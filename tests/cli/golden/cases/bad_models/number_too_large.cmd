vbn check inputs/models/number_too_large.vbn
