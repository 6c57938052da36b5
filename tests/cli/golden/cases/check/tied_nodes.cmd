# A declared parameter shared by two nodes and a declared vector shared by the elements of an
# array node: the blocks they merge, and the weights each element reads.
vbn check inputs/models/tied_nodes.vbn
