# Declared parameters (docs/language.md, "Shared weights"): c and v are one weight each,
# read by every element of y[4], whose four CPDs share one block ("tied with").
vbn check examples/tied/occupancy.vbn --data examples/tied/occupancy.csv
