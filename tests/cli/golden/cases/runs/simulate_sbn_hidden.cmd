vbn simulate examples/paper/sbn_3x8.vbn --rows 5 --seed 3 --include-hidden --params examples/paper/sbn_3x8.params.json
