vbn check inputs/models/cycle.vbn
