# a negative seed is refused (it used to wrap around to 2^64 - 1)
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed -1 --threads 1 --chains 1 --warmup 50 --draws 50
