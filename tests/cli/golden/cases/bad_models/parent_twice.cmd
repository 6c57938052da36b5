vbn check inputs/models/parent_twice.vbn
