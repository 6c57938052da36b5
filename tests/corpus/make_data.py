#!/usr/bin/env python3
"""Simulates the synthetic corpus data sets with fixed seeds (Python standard library only).

Usage: python3 tests/corpus/make_data.py   (rewrites <model>/data.csv for every synthetic model)
Values are written 1/0, a missing cell empty. The true parameters are fixed here, not drawn,
so the data look like their field's: strong but imperfect symptoms, a few rare answers.
"""
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def bern(rng, logit):
    return 1 if rng.random() < 1 / (1 + math.exp(-logit)) else -1


def write(model, header, rows):
    with open(os.path.join(HERE, model, "data.csv"), "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join("" if v is None else (str(v) if isinstance(v, float) else
                                                   ("1" if v == 1 else "0")) for v in r) + "\n")


def hide(rng, values, p):
    return [None if rng.random() < p else v for v in values]


def diagnosis(rng, n=800):
    b = [-1.5, -1.0, -2.0, -0.5, -1.2, -1.8]
    W = [[2.0, 0.0], [1.5, 1.0], [0.2, 2.2], [1.0, 1.0], [0.0, 1.8], [2.5, -0.5]]
    rows = []
    for _ in range(n):
        d = [1 if rng.random() < p else -1 for p in (0.1, 0.3)]
        rows.append([bern(rng, b[k] + W[k][0] * d[0] + W[k][1] * d[1]) for k in range(6)])
    write("diagnosis", ["s[%d]" % (k + 1) for k in range(6)], rows)


def latent_items(rng, n, a, b, w, p_missing):
    rows = []
    for _ in range(n):
        c = bern(rng, a)
        rows.append(hide(rng, [bern(rng, b[k] + w[k] * c) for k in range(len(b))], p_missing))
    return rows


def survey(rng):
    b = [0.5, -0.3, 1.0, 0.0, -1.0, 0.4, 0.8, -0.6]
    w = [1.5, 1.2, 2.0, 0.8, 1.0, 1.8, 0.6, 1.4]
    write("survey", ["q[%d]" % (k + 1) for k in range(8)], latent_items(rng, 600, 0.4, b, w, 0.15))


def occupancy(rng, n=500):
    a, u, c, v = 0.2, [1.0, -0.7], -0.8, [1.6, 1.6, 1.6, 1.6]
    rows = []
    for _ in range(n):
        x = [round(rng.gauss(0, 1), 3) for _ in range(2)]
        z = bern(rng, a + u[0] * x[0] + u[1] * x[1])
        rows.append(x + [bern(rng, c + v[j] * z) for j in range(4)])
    write("occupancy", ["x[1]", "x[2]"] + ["y[%d]" % (j + 1) for j in range(4)], rows)


def sbn2(rng, n=2000):
    c, U = [0.3, -0.2, 0.0], [[2.0, 0.0], [0.0, 2.0], [1.5, -1.5]]
    b = [0.2, -0.4, 0.5, 0.0, -0.3, 0.1, 0.6, -0.5]
    W = [[2.5, 0, 0], [2, 1, 0], [0, 2.5, 0], [0, 1.5, 1.5], [0, 0, 2.5], [1, 0, 2],
         [-2, 0, 1], [0, -2, -1]]
    rows = []
    for _ in range(n):
        t = [1 if rng.random() < 0.5 else -1 for _ in range(2)]
        h = [bern(rng, c[j] + U[j][0] * t[0] + U[j][1] * t[1]) for j in range(3)]
        rows.append([bern(rng, b[k] + sum(W[k][j] * h[j] for j in range(3))) for k in range(8)])
    write("sbn2", ["v[%d]" % (k + 1) for k in range(8)], rows)


def naive_bayes(rng, n=400):
    a = -0.3
    b = [0.1 * k - 0.5 for k in range(10)]
    w = [1.2, -0.8, 0.5, 1.0, 0.0, -1.5, 0.7, 0.3, -0.4, 0.9]
    rows = []
    for _ in range(n):
        k = bern(rng, a)
        f = [bern(rng, b[j] + w[j] * k) for j in range(10)]
        rows.append([k if rng.random() < 0.35 else None] + f)
    write("naive_bayes", ["k"] + ["f[%d]" % (j + 1) for j in range(10)], rows)


def chain_hmm(rng, n=700):
    t1, p1, t2, p2 = 0.3, 1.5, -0.2, 1.2
    b, e = [[0.0, -0.5, 0.5]] * 3, [[1.5, 1.0, 2.0], [1.2, 1.8, 0.8], [2.0, 1.0, 1.4]]
    rows = []
    for _ in range(n):
        h1 = 1 if rng.random() < 0.5 else -1
        h2 = bern(rng, t1 + p1 * h1)
        h3 = bern(rng, t2 + p2 * h2)
        row = []
        for s, h in enumerate([h1, h2, h3]):
            row += [bern(rng, b[s][j] + e[s][j] * h) for j in range(3)]
        rows.append(hide(rng, row, 0.05))
    write("chain_hmm", ["y%d[%d]" % (s + 1, j + 1) for s in range(3) for j in range(3)], rows)


def cauchy_logit(rng, n=40):
    """Nearly separated data, made without randomness: x evenly spaced and scaled to sd 0.5
    (Gelman et al. 2008), y = 1 above 0.1 except the third case above and the third below."""
    del rng
    xs = [-1 + 2 * k / (n - 1) for k in range(n)]
    sd = math.sqrt(sum(x * x for x in xs) / n)
    rows = [[0.5 * x / sd, 1 if 0.5 * x / sd > 0.1 else -1] for x in xs]
    above = [i for i, r in enumerate(rows) if r[1] == 1]
    below = [i for i, r in enumerate(rows) if r[1] == -1]
    rows[above[2]][1], rows[below[-3]][1] = -1, 1
    write("cauchy_logit", ["x", "y"], [[float("%.4f" % x), y] for x, y in rows])


def interaction_logit(rng, n=150):
    """A treatment (±0.5) whose effect grows with a covariate (scaled to sd 0.5, Gelman et al.
    2008): logit P(y) = -0.3 + 1.0 x1 + 0.8 x2 + 2.0 x1 x2."""
    rows = []
    for _ in range(n):
        x1, x2 = round(0.5 * rng.gauss(0, 1), 4), rng.choice((-0.5, 0.5))
        rows.append([x1, x2, bern(rng, -0.3 + 1.0 * x1 + 0.8 * x2 + 2.0 * x1 * x2)])
    write("interaction_logit", ["x[1]", "x[2]", "y"], rows)


def responder_trial(rng, n=600):
    """A 1:1 randomised trial: responders (more likely the more severe the baseline x, on a
    5-point scale -1..1) have three biomarkers raised, and only in them does the treatment
    t help: logit P(y[k]) = b[k] + w[k,1] r + w[k,2] t + w[k,3] r t with w[k,2] = w[k,3], so
    t (±1) moves the logit by ±(w[k,2] + w[k,3]) in responders and not at all in the rest.
    5% of biomarker readings are missing and 12% of week-12 outcomes (dropout)."""
    a, u, c, v = -0.2, 1.0, [-0.5, 0.3, 0.0], [1.5, 1.2, 1.8]
    b, w = [-0.5, -0.2], [[0.5, 0.7, 0.7], [0.4, 0.9, 0.9]]
    rows = []
    for _ in range(n):
        x = rng.choice((-1.0, -0.5, 0.0, 0.5, 1.0))
        t = 1 if rng.random() < 0.5 else -1
        r = bern(rng, a + u * x)
        m = hide(rng, [bern(rng, c[j] + v[j] * r) for j in range(3)], 0.05)
        y = [bern(rng, b[k] + w[k][0] * r + w[k][1] * t + w[k][2] * r * t) for k in range(2)]
        rows.append([x, t] + m + [y[0], None if rng.random() < 0.12 else y[1]])
    write("responder_trial", ["x", "t"] + ["m[%d]" % (j + 1) for j in range(3)] + ["y[1]", "y[2]"], rows)


def occupancy_shared(rng, n=400):
    """Occupancy with one detection rate: the five visits share one intercept c and one
    slope v on the hidden presence z (declared parameters, tied across the elements of y).
    About 10% of visits did not happen (missing)."""
    a, u, c, v = 0.2, [1.0, -0.7], -0.8, 1.6
    rows = []
    for _ in range(n):
        x = [round(rng.gauss(0, 1), 3) for _ in range(2)]
        z = bern(rng, a + u[0] * x[0] + u[1] * x[1])
        rows.append(x + hide(rng, [bern(rng, c + v * z) for _ in range(5)], 0.10))
    write("occupancy_shared", ["x[1]", "x[2]"] + ["y[%d]" % (j + 1) for j in range(5)], rows)


def tied_tests(rng, n=500):
    """A hidden disease d (more likely with age, 7 standardised levels) read by two lab tests
    with one shared sensitivity s (tied across two nodes), and three symptoms whose weights r
    on [d, t1] are shared by the elements (their biases c are not). t1 is also q's parent, so
    where t1 is missing it is summed out with d. 8% of t1, t2 and q cells are missing."""
    a, u, s, b1, b2 = -0.6, 1.0, 1.8, -0.3, 0.2
    c, r = [-0.5, 0.0, -1.0], [1.2, 0.8]
    rows = []
    for _ in range(n):
        age = rng.choice((-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5))
        d = bern(rng, a + u * age)
        t1, t2 = bern(rng, b1 + s * d), bern(rng, b2 + s * d)
        q = [bern(rng, c[k] + r[0] * d + r[1] * t1) for k in range(3)]
        rows.append([age] + hide(rng, [t1, t2] + q, 0.08))
    write("tied_tests", ["age", "t1", "t2"] + ["q[%d]" % (k + 1) for k in range(3)], rows)


def multilevel_items(rng, n=60):
    """Twelve yes/no items answered by 60 respondents: one covariate x (standardised) with one
    slope w shared by the items, the item intercepts b drawn from N(0, tau²) with tau = 1
    (fixed here at values whose sd is 1.02). About 5% of answers are missing."""
    b = [-1.3, 0.4, 1.6, -0.2, 0.9, -1.7, 0.1, 0.8, -0.6, 1.2, -0.9, 0.3]
    w = 0.8
    raw = [rng.gauss(0, 1) for _ in range(n)]
    m = sum(raw) / n
    s = (sum((v - m) ** 2 for v in raw) / (n - 1)) ** 0.5
    rows = []
    for v in raw:
        x = round((v - m) / s, 3)
        rows.append([x] + hide(rng, [bern(rng, b[k] + w * x) for k in range(12)], 0.05))
    write("multilevel_items", ["x"] + ["y[%d]" % (k + 1) for k in range(12)], rows)


def multilevel_hidden(rng):
    """A latent class c behind eight items whose intercepts b come from N(0, tau²), tau about
    1 (fixed values, sd 0.99); loadings v point the same way as c. 10% of answers missing."""
    b = [0.6, -1.1, 1.4, -0.3, 0.2, -1.5, 0.9, -0.4]
    v = [1.5, 1.2, 2.0, 1.0, 1.8, 1.4, 1.6, 1.1]
    write("multilevel_hidden", ["y[%d]" % (k + 1) for k in range(8)], latent_items(rng, 300, 0.3, b, v, 0.10))


if __name__ == "__main__":
    for seed, make in enumerate([diagnosis, survey, occupancy, sbn2, naive_bayes, chain_hmm, cauchy_logit,
                                 interaction_logit, responder_trial, occupancy_shared, tied_tests,
                                 multilevel_items, multilevel_hidden], 1):
        make(random.Random(20261127 + seed))
