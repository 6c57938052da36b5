vbn check inputs/models/duplicate_name.vbn
