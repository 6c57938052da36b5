vbn vb --help
