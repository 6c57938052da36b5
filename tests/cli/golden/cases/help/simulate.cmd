vbn simulate --help
