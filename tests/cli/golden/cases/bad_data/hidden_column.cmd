# a column for the hidden node h
vbn check examples/paper/multimodal.vbn --data examples/paper/multimodal_with_hidden.csv
