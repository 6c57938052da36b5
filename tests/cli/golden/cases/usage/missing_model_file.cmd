vbn check nope.vbn
