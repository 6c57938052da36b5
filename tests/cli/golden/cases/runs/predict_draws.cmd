# prediction from the draws of a fit
vbn fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1 --quiet --chains 2 --warmup 100 --draws 100 --output fit.csv
vbn predict examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --draws fit_1.csv fit_2.csv --target y
