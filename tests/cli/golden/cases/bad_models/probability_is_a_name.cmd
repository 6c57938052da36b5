vbn check inputs/models/probability_is_a_name.vbn
