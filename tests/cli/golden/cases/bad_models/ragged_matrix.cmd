vbn check inputs/models/ragged_matrix.vbn
