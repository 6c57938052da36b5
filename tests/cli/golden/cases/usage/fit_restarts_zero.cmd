# fit --restarts takes vb's check: at least one start.
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --restarts 0 --seed 1
