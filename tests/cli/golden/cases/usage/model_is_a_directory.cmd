vbn check examples
