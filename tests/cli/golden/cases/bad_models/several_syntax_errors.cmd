vbn check inputs/models/several_syntax_errors.vbn
