vbn check inputs/models/probability_out_of_range.vbn
