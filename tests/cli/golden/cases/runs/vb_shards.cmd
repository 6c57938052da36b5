vbn vb examples/chain/hidden_chain.vbn --data examples/chain/hidden_chain.csv --shards 3 --seed 1
