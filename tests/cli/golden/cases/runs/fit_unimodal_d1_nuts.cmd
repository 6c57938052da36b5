# the notes on stderr (no --quiet), with nuts
vbn fit examples/paper/unimodal_d1.vbn --data examples/paper/unimodal_d1.csv --seed 1 --method nuts --threads 1 --chains 2 --warmup 100 --draws 100
