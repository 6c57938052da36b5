# One start on sbn_3x8 stops at the symmetric point, every weight on h[1..3] exactly 0: a
# warning names the nodes and the remedy. (The default 8 starts leave the point.)
vbn vb examples/paper/sbn_3x8.vbn --data examples/paper/sbn_3x8.csv --restarts 1 --correction none
