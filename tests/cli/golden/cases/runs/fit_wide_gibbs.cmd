# too many hidden values per row to sum out: auto falls back to gibbs, with a note
vbn fit examples/wide/wide.vbn --data examples/wide/wide.csv --seed 1 --threads 1 --chains 2 --warmup 100 --draws 100
