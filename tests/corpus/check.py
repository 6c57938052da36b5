#!/usr/bin/env python3
"""Measures vbn against the corpus's gold standards and prints the table model x method.

Usage: python3 tests/corpus/check.py --vbn build/tools/vbn/vbn [--models a,b] [--methods auto,nuts,vb]
Every method except `vb` runs `vbn fit --method M` at default settings otherwise; `vb` runs
`vbn vb` and judges its importance-corrected answer. Exit status 1 if any row fails.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from diagnostics import summarize

HERE = os.path.dirname(os.path.abspath(__file__))
FIT_MEAN_TOL, VB_MEAN_TOL, SD_TOL, RHAT_TOL = 0.1, 0.15, 0.10, 1.01
FNS = {"id": lambda x: x[0], "abs": lambda x: abs(x[0]), "sumabs": lambda x: sum(map(abs, x))}


def models():
    return sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "reference.json")))


def read_chains(prefix):
    """vbn's CmdStan CSV files -> per chain, a dict column name (w[1]) -> list of draws."""
    chains = []
    for path in sorted(glob.glob(prefix + "_*.csv")):
        with open(path) as f:
            rows = list(csv.reader(line for line in f if not line.startswith("#")))
        names = [n.split(".")[0] + ("[" + ",".join(n.split(".")[1:]) + "]" if "." in n else "")
                 for n in rows[0]]
        cols = list(zip(*[[float(v) for v in r] for r in rows[1:]]))
        chains.append(dict(zip(names, cols)))
    return chains


def run(cmd):
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc, time.monotonic() - start


def check_fit(vbn, model, method, ref, tmp):
    d = os.path.join(HERE, model)
    prefix = os.path.join(tmp, model + "_" + method)
    proc, secs = run([vbn, "fit", os.path.join(d, "model.vbn"), "--data", os.path.join(d, "data.csv"),
                      "--method", method, "--seed", "1", "--quiet", "--output", prefix + ".csv"])
    if proc.returncode != 0:
        return None, secs, proc.stderr.strip().splitlines()[-1:]
    chains = read_chains(prefix)
    rows = []
    for q in ref["quantities"]:
        per_chain = [[FNS[q["fn"]](x) for x in zip(*[c[o] for o in q["of"]])] for c in chains]
        flat = [x for c in per_chain for x in c]
        mean = sum(flat) / len(flat)
        sd = (sum((x - mean) ** 2 for x in flat) / (len(flat) - 1)) ** 0.5
        rhat, ess_bulk, ess_tail = summarize(per_chain)
        rows.append((q, mean, sd, rhat, min(ess_bulk, ess_tail)))
    return rows, secs, []


def check_vb(vbn, model, ref, tmp):
    """vb's corrected answer has no draws: |x| is judged by |mean|, sums of |x| by their sum,
    which is what the posterior gives when it keeps one labeling and sits away from 0."""
    d = os.path.join(HERE, model)
    out = os.path.join(tmp, model + "_vb.json")
    proc, secs = run([vbn, "vb", os.path.join(d, "model.vbn"), "--data", os.path.join(d, "data.csv"),
                      "--seed", "1", "--summary-json", out])
    if proc.returncode != 0:
        return None, secs, proc.stderr.strip().splitlines()[-1:]
    pars = {p["name"]: p for p in json.load(open(out))["parameters"]}
    if not all("corrected_mean" in p for p in pars.values()):
        return None, secs, ["no corrected answer"]
    rows = []
    for q in ref["quantities"]:
        ms = [pars[o]["corrected_mean"] for o in q["of"]]
        mean = FNS[q["fn"]](ms)
        sd = pars[q["of"][0]]["corrected_sd"] if q["fn"] != "sumabs" else float("nan")
        rows.append((q, mean, sd, float("nan"), float("nan")))
    return rows, secs, []


def judge(rows, tol_mean):
    mean_err = max(abs(m - q["mean"]) / q["sd"] for q, m, *_ in rows)
    sd_errs = [abs(s / q["sd"] - 1) for q, _, s, *_ in rows if s == s]
    sd_err = max(sd_errs) if sd_errs else float("nan")
    rhats = [r for *_, r, _ in rows if r == r]
    esss = [e for *_, e in rows if e == e]
    rhat, ess = (max(rhats) if rhats else float("nan")), (min(esss) if esss else float("nan"))
    ok = mean_err <= tol_mean and not sd_err > SD_TOL and not rhat > RHAT_TOL
    worst = max(rows, key=lambda r: abs(r[1] - r[0]["mean"]) / r[0]["sd"])[0]["name"].replace("|", "\\|")
    return mean_err, sd_err, rhat, ess, ok, worst


def fmt(x, spec):
    return "–" if x != x else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vbn", required=True)
    ap.add_argument("--models", default=",".join(models()))
    ap.add_argument("--methods", default="auto,nuts,vb")
    args = ap.parse_args()
    print("| model | method | max mean error (sd) | max sd error | max R-hat | min ESS | seconds | worst | result |")
    print("|---|---|---|---|---|---|---|---|---|")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            ref = json.load(open(os.path.join(HERE, model, "reference.json")))
            for method in args.methods.split(","):
                if method == "vb":
                    rows, secs, err = check_vb(args.vbn, model, ref, tmp)
                else:
                    rows, secs, err = check_fit(args.vbn, model, method, ref, tmp)
                if rows is None:
                    failed = True
                    print(f"| {model} | {method} | – | – | – | – | {secs:.1f} | {' '.join(err)} | FAIL |")
                    continue
                me, se, rh, ess, ok, worst = judge(rows, VB_MEAN_TOL if method == "vb" else FIT_MEAN_TOL)
                failed |= not ok
                print(f"| {model} | {method} | {fmt(me, '.3f')} | {fmt(se, '.3f')} | {fmt(rh, '.3f')} "
                      f"| {fmt(ess, '.0f')} | {secs:.1f} | {worst} | {'PASS' if ok else 'FAIL'} |",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
