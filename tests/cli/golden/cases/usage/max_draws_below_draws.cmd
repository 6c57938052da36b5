# --max-draws lets the chains run on past --draws, never stop short of it
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --draws 500 --max-draws 400 --seed 1
