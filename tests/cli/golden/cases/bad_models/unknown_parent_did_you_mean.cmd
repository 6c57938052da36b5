vbn check inputs/models/unknown_parent_did_you_mean.vbn
