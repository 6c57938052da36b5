vbn check inputs/models/bias_is_a_node.vbn
