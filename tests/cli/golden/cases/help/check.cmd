vbn check --help
