vbn check inputs/models/parameter_as_parent.vbn
