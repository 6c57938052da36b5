# 20 hidden values linked in every row, summed by variable elimination: widest 2, within the limit
vbn check examples/chain/hidden_chain.vbn --data examples/chain/hidden_chain.csv
