#!/usr/bin/env python3
"""Exact posterior mean and sd of the paper's multimodal model by grid integration.

The model of examples/paper/multimodal.vbn and bimodal.vbn: hidden h with P(h = +1) = 0.6 summed
out, observed o, child y with logit 2 + w[1] h + w[2] o, prior w ~ N(3, 10 I). The midpoint rule
over [-20, 25]^2 with 451 points per axis, as validation/grid_posterior.hpp does (the density on the
border is below e^-25 of the top). Writes a bench/speed_table reference file:

    python3 bench/grid_reference.py examples/paper/bimodal.csv bench/reference/bimodal.json

With --unimodal-d1, the same for examples/paper/unimodal_d1.vbn (one weight: y with logit
0.5 + w x[1], prior w ~ N(0, 100)) by the midpoint rule over [-2, 4] with 600,001 points (the
posterior is 0.96 +- 0.07 there), in place of a long NUTS run whose own Monte Carlo error
(0.005 sd) shows in the one-weight example's errors:

    python3 bench/grid_reference.py --unimodal-d1 examples/paper/unimodal_d1.csv bench/reference/unimodal_d1.json

Only the Python standard library is needed.
"""
import collections
import csv
import json
import math
import sys


def log_sigmoid(z):
    return -math.log1p(math.exp(-z)) if z > -30 else z - math.log1p(math.exp(z))


def grid_moments(path, lo=-20.0, hi=25.0, n=451):
    with open(path) as f:
        counts = collections.Counter((int(r["o"]), int(r["y"])) for r in csv.DictReader(f))
    xs = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    log_p = {}
    for a in xs:
        for b in xs:
            v = -((a - 3) ** 2 + (b - 3) ** 2) / 20
            for (o, y), c in counts.items():
                t1 = math.log(0.6) + log_sigmoid(y * (2 + a + b * o))
                t2 = math.log(0.4) + log_sigmoid(y * (2 - a + b * o))
                m = max(t1, t2)
                v += c * (m + math.log(math.exp(t1 - m) + math.exp(t2 - m)))
            log_p[(a, b)] = v
    top = max(log_p.values())
    z = s1 = s2 = q1 = q2 = 0.0
    for (a, b), v in log_p.items():
        p = math.exp(v - top)
        z += p
        s1 += p * a
        s2 += p * b
        q1 += p * a * a
        q2 += p * b * b
    mean = [s1 / z, s2 / z]
    sd = [math.sqrt(q1 / z - mean[0] ** 2), math.sqrt(q2 / z - mean[1] ** 2)]
    return mean, sd


def unimodal_d1_moments(path, lo=-2.0, hi=4.0, n=600001):
    with open(path) as f:
        counts = collections.Counter((int(r["x[1]"]), int(r["y"])) for r in csv.DictReader(f))
    step = (hi - lo) / n
    log_p = []
    for i in range(n):
        w = lo + (i + 0.5) * step
        log_p.append(-w * w / 200 + sum(c * log_sigmoid(y * (0.5 + w * x)) for (x, y), c in counts.items()))
    top = max(log_p)
    z = s1 = s2 = 0.0
    for i, v in enumerate(log_p):
        w = lo + (i + 0.5) * step
        p = math.exp(v - top)
        z += p
        s1 += p * w
        s2 += p * w * w
    if max(log_p[0], log_p[-1]) > top - 30:
        sys.exit("the grid's ends are not in the tails: widen it")
    mean = s1 / z
    return mean, math.sqrt(s2 / z - mean * mean)


def main():
    args = sys.argv[1:]
    d1 = bool(args) and args[0] == "--unimodal-d1"
    if d1:
        args = args[1:]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    if d1:
        mean, sd = unimodal_d1_moments(args[0])
        ref = {"method": "grid", "points": 600001, "box": [-2, 4], "names": ["w"], "mean": [mean], "sd": [sd]}
    else:
        mean, sd = grid_moments(args[0])
        ref = {"method": "grid", "points": 451, "box": [-20, 25], "names": ["w[1]", "w[2]"], "mean": mean, "sd": sd}
    if len(args) == 2:
        with open(args[1], "w") as f:
            json.dump(ref, f, indent=1)
    print(json.dumps(ref))


if __name__ == "__main__":
    main()
