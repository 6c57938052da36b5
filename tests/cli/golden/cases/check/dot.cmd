# the Graphviz DOT file of a network with arrays
vbn check examples/paper/sbn_3x8.vbn --dot net.dot
@cat net.dot
