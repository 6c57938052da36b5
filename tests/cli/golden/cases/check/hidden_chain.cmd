vbn check examples/chain/hidden_chain.vbn
