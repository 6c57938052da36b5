vbn simulate examples/wells/wells.vbn --rows 4 --seed 3 --output sim.csv
@cat sim.csv
