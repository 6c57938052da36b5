# --restarts is a count of starts, at least 1 (0 is not "automatic" on the command line).
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --restarts 0 --seed 1
