vbn check inputs/models/bad_indices.vbn
