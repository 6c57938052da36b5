vbn check inputs/models/unknown_function.vbn
