# a model with interactions: simulate, fit (auto and gibbs) and predict from the draws
vbn simulate inputs/interaction/interaction.vbn --rows 200 --seed 4 --params inputs/interaction/params.json --output sim.csv
vbn fit inputs/interaction/interaction.vbn --data sim.csv --seed 1 --quiet --warmup 200 --draws 200 --threads 1 --output draws.csv
vbn fit inputs/interaction/interaction.vbn --data sim.csv --method gibbs --seed 1 --quiet --warmup 200 --draws 200 --threads 1
vbn predict inputs/interaction/interaction.vbn --data inputs/interaction/new.csv --draws draws_1.csv draws_2.csv draws_3.csv draws_4.csv
