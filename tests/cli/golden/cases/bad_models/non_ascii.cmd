vbn check inputs/models/non_ascii.vbn
