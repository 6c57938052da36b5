#!/usr/bin/env python3
"""The unimodal experiments of Variational MCMC Sec. 5.1: Fig. 12-13 and Table 1.

For d = 1, 5, 10, 20, 50 parents and 10 repetitions: weights Uniform(0, 1], bias 0.5,
parents +-1 with P = 0.5, T = 1000 rows, prior N(0, 10^2) per weight. On each data set:

  reference  `vbn vb` with the importance correction (8,000 draws per round), checked by its
             Pareto k-hat; for the paper's five data sets it agrees with 4 x 25,000-draw NUTS
             runs to 0.05 sd (docs/experiments-unimodal.md);
  VB         the raw Jaakkola-Jordan fit ("mean" of the --summary-json, whose importance-corrected
             moments are "corrected_mean" and "corrected_sd"), EM time from a run with
             --correction none;
  rwm, varblock (VarMCMC), varmix (VarMixMCMC): `vbn fit`, one chain, 500 and 5,000 draws
             after draws/5 warmup iterations.

Scores per estimate m of the posterior mean: the paper's, the log-likelihood of the data at m
minus the log-likelihood at the random walk's estimate (Fig. 12-13: positive = better than the
random walk), and the RMS standardised error sqrt(mean_k ((m_k - ref_k) / sd_k)^2).

Usage: bench/unimodal_experiments.py VBN OUT_DIR [--reps N] [--dims 1,5,10,20,50]
Writes OUT_DIR/results.tsv (one line per data set, method and budget), OUT_DIR/tables.md and,
when gnuplot is installed, OUT_DIR/fig12_500.png and OUT_DIR/fig13_5000.png.
"""
import argparse
import csv
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys

METHODS = ["rwm", "varblock", "varmix"]
BUDGETS = [500, 5000]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p


def log_likelihood(rows, theta):
    total = 0.0
    for x, y in rows:
        eta = 0.5 + sum(t * v for t, v in zip(theta, x))
        z = y * eta
        total += -math.log1p(math.exp(-z)) if z > 0 else z - math.log1p(math.exp(z))
    return total


def read_rows(path):
    with open(path) as f:
        r = csv.reader(f)
        next(r)
        return [([float(v) for v in line[:-1]], float(line[-1])) for line in r]


def means(doc, key="mean"):
    return [p[key] for p in doc["parameters"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vbn")
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dims", default="1,5,10,20,50")
    args = ap.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    results = []
    for d in dims:
        model = os.path.join(work, f"u{d}.vbn")
        with open(model, "w") as f:
            f.write(f"node x[{d}] ~ bernoulli(0.5);\nnode y ~ logistic(0.5 + w * x);\nw ~ normal(0, 10);\n")
        for rep in range(args.reps):
            seed = 1000 * d + rep
            rng = random.Random(seed)
            params = os.path.join(work, f"u{d}_{rep}.params.json")
            with open(params, "w") as f:
                json.dump({"w": [1 - rng.random() for _ in range(d)]}, f)
            data = os.path.join(work, f"u{d}_{rep}.csv")
            run([args.vbn, "simulate", model, "--rows", "1000", "--seed", str(seed), "--params", params, "--output", data])
            rows = read_rows(data)
            js = os.path.join(work, "out.json")
            run([args.vbn, "vb", model, "--data", data, "--correction-draws", "8000", "--seed", str(seed),
                 "--summary-json", js])
            ref = json.load(open(js))
            run([args.vbn, "vb", model, "--data", data, "--correction", "none", "--summary-json", js])
            em = json.load(open(js))
            ref_mean, ref_sd = means(ref, "corrected_mean"), means(ref, "corrected_sd")

            def score(m):
                return math.sqrt(statistics.fmean(((a - b) / s) ** 2 for a, b, s in zip(m, ref_mean, ref_sd)))

            base = dict(d=d, rep=rep, k_hat=ref["pareto_k"], ref_ess=ref["correction_ess"])
            estimates = {}
            for budget in BUDGETS:
                for method in METHODS:
                    # --proposal vb: the paper's VarMCMC and VarMixMCMC propose from the VB fit.
                    run([args.vbn, "fit", model, "--data", data, "--method", method, "--proposal", "vb",
                         "--chains", "1", "--threads", "1",
                         "--warmup", str(budget // 5), "--draws", str(budget), "--seed", str(seed), "--quiet",
                         "--summary-json", js])
                    fit = json.load(open(js))
                    estimates[(method, budget)] = (means(fit), fit["warmup_seconds"] + fit["sampling_seconds"])
                estimates[("vb", budget)] = (means(em), em["seconds"])
                rw_ll = log_likelihood(rows, estimates[("rwm", budget)][0])
                for method in ["vb"] + METHODS:
                    m, seconds = estimates[(method, budget)]
                    results.append(dict(base, budget=budget, method=method, err=score(m),
                                        rel_ll=log_likelihood(rows, m) - rw_ll, seconds=seconds,
                                        correction_seconds=ref["seconds"] - em["seconds"]))
            print(f"d={d} rep={rep} k_hat={ref['pareto_k']:.2f} "
                  + " ".join(f"{r['method']}/{r['budget']}:{r['err']:.3f}" for r in results[-8:]), flush=True)

    with open(os.path.join(args.out, "results.tsv"), "w") as f:
        keys = list(results[0].keys())
        f.write("\t".join(keys) + "\n")
        for r in results:
            f.write("\t".join(f"{r[k]:.6g}" if isinstance(r[k], float) else str(r[k]) for k in keys) + "\n")

    def pick(d, method, budget, key):
        return [r[key] for r in results if r["d"] == d and r["method"] == method and r["budget"] == budget]

    def mean_sd(v):
        return statistics.fmean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)

    lines = []
    for budget in BUDGETS:
        lines.append(f"\n### {budget} draws: log-likelihood at the estimated mean minus the random walk's "
                     f"(mean +- sd over {args.reps} data sets)\n")
        lines.append("| parents | VB | VarMCMC (varblock) | VarMixMCMC (varmix) |")
        lines.append("|---|---|---|---|")
        for d in dims:
            cells = [("%.3f +- %.3f" % mean_sd(pick(d, m, budget, "rel_ll"))) for m in ["vb", "varblock", "varmix"]]
            lines.append(f"| {d} | " + " | ".join(cells) + " |")
        lines.append(f"\n### {budget} draws: RMS error of the posterior mean in posterior sds (mean +- sd)\n")
        lines.append("| parents | VB (raw JJ) | RW (rwm) | VarMCMC (varblock) | VarMixMCMC (varmix) |")
        lines.append("|---|---|---|---|---|")
        for d in dims:
            cells = [("%.3f +- %.3f" % mean_sd(pick(d, m, budget, "err"))) for m in ["vb", "rwm", "varblock", "varmix"]]
            lines.append(f"| {d} | " + " | ".join(cells) + " |")
    lines.append("\n### Table 1: seconds (median over data sets; MCMC = varmix warmup + sampling, one chain)\n")
    lines.append("| parents | EM | correction | MCMC 500 | MCMC 5,000 | reference k-hat (max) |")
    lines.append("|---|---|---|---|---|---|")
    for d in dims:
        em = statistics.median(pick(d, "vb", 500, "seconds"))
        corr = statistics.median(pick(d, "vb", 500, "correction_seconds"))
        m500 = statistics.median(pick(d, "varmix", 500, "seconds"))
        m5000 = statistics.median(pick(d, "varmix", 5000, "seconds"))
        k = max(pick(d, "vb", 500, "k_hat"))
        lines.append(f"| {d} | {em:.4f} | {corr:.3f} | {m500:.4f} | {m5000:.4f} | {k:.2f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write(text)
    print(text)

    if shutil.which("gnuplot"):
        for budget, name in [(500, "fig12_500"), (5000, "fig13_5000")]:
            dat = os.path.join(work, f"{name}.dat")
            with open(dat, "w") as f:
                for d in dims:
                    row = [str(d)]
                    for m in ["vb", "varblock", "varmix"]:
                        row += ["%.6g" % x for x in mean_sd(pick(d, m, budget, "rel_ll"))]
                    for m in ["vb", "rwm", "varblock", "varmix"]:
                        row += ["%.6g" % x for x in mean_sd(pick(d, m, budget, "err"))]
                    f.write(" ".join(row) + "\n")
            png = os.path.join(args.out, f"{name}.png")
            script = f"""
set terminal png size 900,380 font ',10'
set output '{png}'
set multiplot layout 1,2 title '{budget} draws, {args.reps} data sets per point (mean +- sd)'
set xlabel 'parents'
set logscale x
set xtics (1,5,10,20,50)
set xrange [0.8:65]
set key top left
set ylabel 'log-lik at mean - log-lik at RW mean'
plot '{dat}' u ($1*0.97):2:3 w yerrorlines t 'VB', '' u 1:4:5 w yerrorlines t 'VarMCMC', '' u ($1*1.03):6:7 w yerrorlines t 'VarMixMCMC'
set logscale y
set ylabel 'RMS error of the mean (posterior sds)'
plot '{dat}' u ($1*0.96):8:9 w yerrorlines t 'VB', '' u ($1*0.98):10:11 w yerrorlines t 'RW', '' u ($1*1.02):12:13 w yerrorlines t 'VarMCMC', '' u ($1*1.04):14:15 w yerrorlines t 'VarMixMCMC'
unset multiplot
"""
            subprocess.run(["gnuplot"], input=script, text=True, check=True)


if __name__ == "__main__":
    main()
