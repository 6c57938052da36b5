vbn summary nope_1.csv
