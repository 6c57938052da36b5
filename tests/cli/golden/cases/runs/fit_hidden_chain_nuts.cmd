# a 20-node hidden chain, refused by enumeration (2^20 terms per row), fitted by NUTS on the
# exact target summed by variable elimination
vbn fit examples/chain/hidden_chain.vbn --data examples/chain/hidden_chain.csv --method nuts --seed 1 --threads 1 --chains 1 --warmup 60 --draws 60
