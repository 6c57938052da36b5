vbn check inputs/models/empty_list.vbn
