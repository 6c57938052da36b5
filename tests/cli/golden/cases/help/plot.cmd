vbn plot --help
