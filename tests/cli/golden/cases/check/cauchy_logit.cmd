# Cauchy priors (Gelman et al. 2008's default) on a logistic regression: the printout shows them
vbn check examples/cauchy/cauchy_logit.vbn --data examples/cauchy/cauchy_logit.csv
