vbn compare --help
