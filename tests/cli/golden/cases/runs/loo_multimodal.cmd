# a hidden node summed out of every row's log-likelihood; every k̂ good
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 3 --quiet --log-lik --chains 2 --warmup 200 --draws 300 --output mm.csv
vbn loo mm_1.csv mm_2.csv
