vbn frobnicate
