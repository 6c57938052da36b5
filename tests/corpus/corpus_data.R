# A corpus model's data.csv as the peers read it: for Stan, distinct rows with their counts
# and nodes coded +1/-1/0 (make_reference.R, bench/peers/run_corpus.R); for JAGS, every row
# with nodes 1/0/NA, the hidden values left for JAGS to sample (check_jags.R, run_corpus.R).

# vbn's CSV -> distinct rows with counts; binary 1/0 -> +1/-1, missing -> 0.
read_corpus_data <- function(path) {
  raw <- read.csv(path, colClasses = "character", check.names = FALSE, na.strings = "")
  key <- do.call(paste, c(raw, sep = ","))
  keep <- !duplicated(key)
  cnt <- as.integer(table(key)[key[keep]])
  rows <- raw[keep, , drop = FALSE]
  groups <- split(names(rows), sub("\\[.*", "", names(rows)))
  data <- list(N = nrow(rows), cnt = cnt)
  for (g in names(groups)) {
    cols <- rows[, groups[[g]], drop = FALSE]
    binary <- all(unlist(cols) %in% c("0", "1", NA))
    m <- sapply(cols, function(v) if (binary) ifelse(is.na(v), 0L, ifelse(v == "1", 1L, -1L))
                                  else as.numeric(v))
    data[[g]] <- matrix(m, nrow = nrow(rows))
  }
  data
}

# The CSV's columns grouped by node (y[1], y[2] -> y): 1/0 with NA for nodes, numbers for
# covariates; a scalar node is a vector, an array a matrix.
read_raw <- function(path) {
  raw <- read.csv(path, check.names = FALSE, na.strings = "")
  groups <- split(names(raw), sub("\\[.*", "", names(raw)))
  c(list(N = nrow(raw)), lapply(groups, function(cols)
    if (length(cols) == 1 && !grepl("\\[", cols)) raw[[cols]] else as.matrix(raw[, cols])))
}

