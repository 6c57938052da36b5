# Writes housevotes/data.csv from mlbench::HouseVotes84 (Debian: r-cran-mlbench):
# y -> 1, n -> 0, NA -> empty; the party column is dropped (the class is hidden in the model).
# Usage: Rscript tests/corpus/housevotes/make_data.R
library(mlbench)
data(HouseVotes84)
v <- HouseVotes84[, 2:17]
out <- sapply(v, function(col) ifelse(is.na(col), "", ifelse(col == "y", "1", "0")))
colnames(out) <- sprintf("v[%d]", 1:16)
args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("^--file=", "", args[grep("^--file=", args)])))
write.csv(out, file.path(here, "data.csv"), row.names = FALSE, quote = FALSE)
