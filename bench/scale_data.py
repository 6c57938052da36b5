#!/usr/bin/env python3
"""Data for the scale benchmark: a Bayesian logistic regression on real covariates.

    bench/scale_data.py ROWS COLUMNS SEED OUT.csv

Writes OUT.csv with columns x[1..COLUMNS] ~ N(0, 1) (full double precision, so that no two
rows repeat) and y in {1, -1} with logit P(y = 1) = 0.3 + sum_k w_k x_k, w_k = (-1)^k 0.5 / k,
and prints the model (covariate x[COLUMNS]; node y ~ logistic(b + w * x)) on stdout.
The standard library's Mersenne Twister with a fixed seed makes the file reproducible.
"""
import math
import random
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    rows, columns, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if rows < 1 or columns < 1:
        sys.exit("ROWS and COLUMNS must be positive")
    rng = random.Random(seed)
    weights = [(-1) ** k * 0.5 / k for k in range(1, columns + 1)]
    with open(out, "w") as f:
        f.write(",".join(f"x[{k}]" for k in range(1, columns + 1)) + ",y\n")
        for _ in range(rows):
            x = [rng.gauss(0.0, 1.0) for _ in range(columns)]
            eta = 0.3 + sum(w * v for w, v in zip(weights, x))
            y = 1 if rng.random() < 1 / (1 + math.exp(-eta)) else -1
            f.write(",".join(repr(v) for v in x) + f",{y}\n")
    print(f"covariate x[{columns}];\nnode y ~ logistic(b + w * x);\nb ~ normal(0, 2);\nw ~ normal(0, 1);")


if __name__ == "__main__":
    main()
