# two sources of the posterior at once: the message says so (it used to say neither was given)
vbn predict examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --vb --train examples/paper/multimodal.csv --draws fit_1.csv
