vbn check inputs/models/bad_constants.vbn
