# What each reference reports. Where the posterior has an exact symmetry (flipping the
# sign of a hidden node with a symmetric prior, or permuting hidden nodes), a parameter's own
# mean depends on which labeling the chain found, so the reference holds functions that do not:
# |a|, |w[k]|, and for the two-layer network the row sums of |W| (permutation-free too).
# fn: "id" (the parameter itself), "abs" (|x|), "sumabs" (sum of |x| over `of`).
# check.py computes the same functions from vbn's draws.
symmetric <- c("survey", "housevotes", "sbn2", "sbn_3x8")

quantity_fn <- function(fn) switch(fn, id = function(x) x[1], abs = function(x) abs(x[1]),
                                   sumabs = function(x) sum(abs(x)))

corpus_quantities <- function(model, names) {
  q <- function(name, fn, of) list(name = name, fn = fn, of = of)
  if (!(model %in% symmetric)) return(lapply(names, function(n) q(n, "id", n)))
  if (model %in% c("sbn2", "sbn_3x8")) {
    b <- grep("^b\\[", names, value = TRUE)
    rows <- lapply(seq_along(b), function(k) {
      of <- grep(sprintf("^W\\[%d,", k), names, value = TRUE)
      q(sprintf("sum|W[%d,]|", k), "sumabs", of)
    })
    cs <- grep("^c\\[", names, value = TRUE)
    return(c(lapply(b, function(n) q(n, "id", n)), rows,
             if (length(cs)) list(q("sum|c|", "sumabs", cs)) else list()))
  }
  lapply(names, function(n) if (grepl("^b", n)) q(n, "id", n) else q(sprintf("|%s|", n), "abs", n))
}

# Within one labeling: every parameter itself, for symmetric models only. The reference run
# starts all chains at one mode and stays in its labeling (its R-hat over these says so);
# check.py maps vbn's relabelled draws onto that labeling before comparing (labelings.py).
within_quantities <- function(model, names) {
  if (!(model %in% symmetric)) return(list())
  lapply(names, function(n) list(name = n, fn = "id", of = n))
}

# A minimal JSON writer (no jsonlite on the machine): lists with names -> objects.
jsonlite_free_json <- function(x, indent = "") {
  inner <- paste0(indent, "  ")
  if (is.list(x)) {
    parts <- sapply(x, jsonlite_free_json, indent = inner)
    if (is.null(names(x)))
      return(paste0("[\n", inner, paste(parts, collapse = paste0(",\n", inner)), "\n", indent, "]"))
    keys <- sprintf("\"%s\": %s", names(x), parts)
    return(paste0("{\n", inner, paste(keys, collapse = paste0(",\n", inner)), "\n", indent, "}"))
  }
  if (is.character(x)) {
    s <- sprintf("\"%s\"", gsub("\"", "\\\\\"", x))
    return(if (length(x) == 1) s else paste0("[", paste(s, collapse = ", "), "]"))
  }
  s <- ifelse(is.finite(x), formatC(x, digits = 8, format = "g"), "null")
  if (length(x) == 1) s else paste0("[", paste(s, collapse = ", "), "]")
}
