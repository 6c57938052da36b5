vbn check inputs/models/unknown_parent.vbn
