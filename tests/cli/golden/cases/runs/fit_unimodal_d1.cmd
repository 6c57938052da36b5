vbn fit examples/paper/unimodal_d1.vbn --data examples/paper/unimodal_d1.csv --seed 1 --quiet --warmup 200 --draws 200
