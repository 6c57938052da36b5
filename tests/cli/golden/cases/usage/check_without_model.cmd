vbn check
