vbn check examples/paper/multimodal.vbn --data inputs/data/binary_byte.csv
