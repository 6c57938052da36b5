# the CmdStan CSV files a fit writes, read back by summary
vbn fit examples/paper/unimodal_d1.vbn --data examples/paper/unimodal_d1.csv --seed 1 --quiet --chains 2 --warmup 100 --draws 100 --output fit.csv
vbn summary fit_1.csv fit_2.csv
