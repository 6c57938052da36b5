vbn check inputs/models/heavy_scale.vbn
