vbn fit --help
