vbn check inputs/models/missing_semicolon.vbn
