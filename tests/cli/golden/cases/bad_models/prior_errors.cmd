vbn check inputs/models/prior_errors.vbn
