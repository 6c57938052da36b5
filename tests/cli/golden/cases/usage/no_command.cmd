vbn
