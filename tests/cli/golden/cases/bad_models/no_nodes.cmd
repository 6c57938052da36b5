vbn check inputs/models/no_nodes.vbn
