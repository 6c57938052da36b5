# Without enough ESS after --draws the chains run on, each extension said in a note, up to
# --max-draws; there the note and the summary say what is still short (docs/methods.md,
# "Draws until the ESS is enough").
vbn fit examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --warmup 200 --draws 100 --max-draws 300 --seed 1 --threads 1
