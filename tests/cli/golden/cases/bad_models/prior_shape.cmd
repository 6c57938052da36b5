vbn check inputs/models/prior_shape.vbn
