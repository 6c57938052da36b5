vbn check inputs/models/parameter_reused.vbn
