vbn check inputs/models/negative_sd.vbn
