vbn --help
