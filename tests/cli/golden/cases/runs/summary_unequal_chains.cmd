# the chain files of an interrupted run (40, 25 and no draws): vbn summary uses the first
# 25 draws of the two with draws and says so on stderr; files none of which holds a draw
# are an error
vbn summary inputs/interrupted/run_1.csv inputs/interrupted/run_2.csv inputs/interrupted/run_3.csv
vbn summary inputs/interrupted/run_3.csv inputs/interrupted/run_3.csv
