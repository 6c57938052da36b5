# Learned prior scales (docs/language.md, "Learned prior scales"): tau is listed as a learned
# scale, after the weights it scales.
vbn check examples/multilevel/items.vbn --data examples/multilevel/items.csv
