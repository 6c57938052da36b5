# restarts, and the JSON summary
vbn vb examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --restarts 3 --correction none --summary-json vb.json --seed 1
@cat vb.json
