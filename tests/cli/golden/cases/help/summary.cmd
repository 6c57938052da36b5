vbn summary --help
