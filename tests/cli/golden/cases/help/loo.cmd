vbn loo --help
