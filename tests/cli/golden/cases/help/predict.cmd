vbn predict --help
