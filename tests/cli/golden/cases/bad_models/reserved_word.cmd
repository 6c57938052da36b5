vbn check inputs/models/reserved_word.vbn
