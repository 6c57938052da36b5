# Relabelling to a pivot (docs/methods.md): on a small network with 8 equivalent labelings the
# chains cross between labelings; the draws are relabelled to one before the summary, the
# Symmetry line says how many, each CSV file's header says how many of its own, and
# vbn summary of the files gives the same table. With --relabel none the same draws stay as
# drawn: the file says so and R-hat shows the chains in different labelings.
vbn fit inputs/relabel/sbn_2x4.vbn --data inputs/relabel/sbn_2x4.csv --seed 3 --chains 2 --warmup 100 --draws 30 --threads 1 --quiet --output fit.csv
@cat fit_1.csv
vbn summary fit_1.csv fit_2.csv
vbn fit inputs/relabel/sbn_2x4.vbn --data inputs/relabel/sbn_2x4.csv --seed 3 --chains 2 --warmup 100 --draws 30 --threads 1 --quiet --relabel none --output raw.csv
@cat raw_1.csv
