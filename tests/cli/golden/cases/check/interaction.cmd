# products of parents, a fixed scale and a vector of fixed weights in the printout and the DOT file
vbn check inputs/interaction/interaction.vbn --dot net.dot
@cat net.dot
