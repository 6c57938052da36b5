# Three models ranked by log evidence: log Bayes factors against the best and posterior
# model probabilities under equal prior odds (no pairwise A-B line beyond two models)
vbn compare examples/wells/wells.vbn examples/wells/wells_dist.vbn examples/wells/wells_arsenic.vbn --data examples/wells/wells.csv --seed 1
