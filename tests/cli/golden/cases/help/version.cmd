vbn --version
