# Checks a reference by an independent route: JAGS on <model>/model.jags, the hidden and
# missing values sampled (Gibbs) on the raw rows, against <model>/reference.json.
# Usage: nice -n 10 Rscript tests/corpus/check_jags.R MODEL [DRAWS_PER_CHAIN=5000] [SEED=1]
# Four chains, 1,000 adaptation and burn-in iterations, all started at the reference's means
# (the major mode, as the Stan chains were). For models whose quantities are the parameters
# themselves (no symmetry). Prints per parameter the difference of the means in reference sd
# beside JAGS's Monte Carlo error in the same unit, and the ratio of the sds.
suppressMessages(library(rjags))
args <- commandArgs(trailingOnly = TRUE)
model <- args[1]
draws <- if (length(args) > 1) as.integer(args[2]) else 5000L
seed <- if (length(args) > 2) as.integer(args[3]) else 1L
here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
dir <- file.path(here, model)

# reference.json's quantities, read line by line (no JSON package on the machine): the file is
# make_reference.R's, one field a line, so names, means and sds come in the same order.
read_reference <- function(path) {
  lines <- readLines(path)
  field <- function(key) sub(sprintf('^\\s*"%s": "?([^",]*)"?,?$', key), "\\1",
                             grep(sprintf('^\\s*"%s":', key), lines, value = TRUE))
  data.frame(name = field("name"), mean = as.numeric(field("mean")), sd = as.numeric(field("sd")))
}

source(file.path(here, "corpus_data.R"))

ref <- read_reference(file.path(dir, "reference.json"))
base <- sub("\\[.*", "", ref$name)
start_at <- lapply(split(ref$mean, factor(base, unique(base))), unname)
inits <- lapply(1:4, function(k) c(start_at, .RNG.name = "base::Mersenne-Twister",
                                   .RNG.seed = seed * 100 + k))
start <- Sys.time()
jm <- jags.model(file.path(dir, "model.jags"), data = read_raw(file.path(dir, "data.csv")),
                 inits = inits, n.chains = 4, n.adapt = 500, quiet = TRUE)
update(jm, 500, progress.bar = "none")
samples <- coda.samples(jm, unique(base), n.iter = draws, progress.bar = "none")
seconds <- as.numeric(difftime(Sys.time(), start, units = "secs"))
m <- as.matrix(samples)[, ref$name, drop = FALSE]
ess <- coda::effectiveSize(samples)[ref$name]
rhat <- coda::gelman.diag(samples, autoburnin = FALSE, multivariate = FALSE)$psrf[ref$name, 1]
diff <- (colMeans(m) - ref$mean) / ref$sd
cat(sprintf("%s: JAGS 4 x %d draws, %.0f s\n", model, draws, seconds))
cat(sprintf("%-6s %9s %9s %9s %9s %11s %9s %8s %7s\n", "name", "ref mean", "JAGS mean", "ref sd",
            "JAGS sd", "diff (sd)", "MCSE (sd)", "sd ratio", "R-hat"))
cat(sprintf("%-6s %9.4f %9.4f %9.4f %9.4f %+11.4f %9.4f %8.4f %7.4f\n", ref$name, ref$mean,
            colMeans(m), ref$sd, apply(m, 2, sd), diff, 1 / sqrt(ess), apply(m, 2, sd) / ref$sd,
            rhat), sep = "")
cat(sprintf("max |diff| %.4f sd, largest |diff| / MCSE %.2f, max |sd ratio - 1| %.4f\n",
            max(abs(diff)), max(abs(diff) * sqrt(ess)), max(abs(apply(m, 2, sd) / ref$sd - 1))))
