# Twelve items' intercepts with a learned scale (examples/multilevel): auto's varblock with the
# scale's slice step, and vb with q(tau); tau is reported as itself, not its log.
vbn fit examples/multilevel/items.vbn --data examples/multilevel/items.csv --seed 2 --chains 4 --warmup 500 --draws 500 --threads 1 --quiet
vbn vb examples/multilevel/items.vbn --data examples/multilevel/items.csv --seed 2
