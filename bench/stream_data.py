#!/usr/bin/env python3
"""Data for the scale benchmark's streamed case: many rows, few distinct ones, values missing.

    bench/stream_data.py ROWS SEED OUT.csv

Writes OUT.csv for the model it prints on stdout,

    node x[3] ~ logistic(a);
    node y[5] ~ logistic(b + W * x);

with a = (0.5, -0.3, 0), b_j = 0.2 (j - 3), W_jk = 0.8 (-1)^(j+k) / k, values coded 1/-1, and
then each x value missing with probability 0.2 and each y value with probability 0.05 (an
empty field; the model sums the missing values out). There are at most 3^8 = 6,561 distinct
rows whatever ROWS is, so vbn's memory should not grow with ROWS while the file does (about
19 bytes a row).

Each row is drawn whole from the exact distribution of the rows as written (the values, then
which are missing): a draw per row rather than per value, so that 10^7 rows take seconds in
the standard library alone. Its Mersenne Twister with a fixed seed makes the file the same on
every machine.
"""
import itertools
import math
import random
import sys

A = [0.5, -0.3, 0.0]
B = [0.2 * (j - 3) for j in range(1, 6)]
W = [[0.8 * (-1) ** (j + k) / k for k in range(1, 4)] for j in range(1, 6)]
MISSING = [0.2] * 3 + [0.05] * 5


def sigmoid(t):
    return 1 / (1 + math.exp(-t))


def row_distribution():
    """The written rows ("1", "-1" or "" in each of the 8 fields) and their probabilities."""
    prob = {}
    for values in itertools.product((1, -1), repeat=8):
        x, y = values[:3], values[3:]
        p = math.prod(sigmoid(a * v) for a, v in zip(A, x))  # P(v) = sigmoid(v η) for v = ±1
        p *= math.prod(sigmoid(v * (b + sum(wk * xk for wk, xk in zip(w, x)))) for b, w, v in zip(B, W, y))
        for mask in itertools.product((False, True), repeat=8):
            q = p * math.prod(m if gone else 1 - m for m, gone in zip(MISSING, mask))
            key = ",".join("" if gone else str(v) for v, gone in zip(values, mask)) + "\n"
            prob[key] = prob.get(key, 0.0) + q
    rows = sorted(prob)  # a fixed order, so that the seed fixes the file
    return rows, [prob[r] for r in rows]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    rows, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if rows < 1:
        sys.exit("ROWS must be positive")
    rng = random.Random(seed)
    text, weights = row_distribution()
    cumulative = list(itertools.accumulate(weights))
    with open(out, "w") as f:
        f.write(",".join([f"x[{k}]" for k in range(1, 4)] + [f"y[{j}]" for j in range(1, 6)]) + "\n")
        chunk = 1_000_000
        for start in range(0, rows, chunk):
            f.write("".join(rng.choices(text, cum_weights=cumulative, k=min(chunk, rows - start))))
    print("node x[3] ~ logistic(a);\nnode y[5] ~ logistic(b + W * x);\na ~ normal(0, 2);\nb ~ normal(0, 2);\n"
          "W ~ normal(0, 1);")


if __name__ == "__main__":
    main()
