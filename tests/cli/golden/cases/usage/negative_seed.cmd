# a negative seed: accepted today, and this case pins what it then does
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed -1 --threads 1 --chains 1 --warmup 50 --draws 50
