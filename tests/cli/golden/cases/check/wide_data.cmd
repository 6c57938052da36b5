# 14 hidden values linked and summed together in every row: the rows too wide, pointing to gibbs
vbn check examples/wide/wide.vbn --data examples/wide/wide.csv
