vbn check inputs/models/node_as_coefficient.vbn
