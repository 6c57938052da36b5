#!/usr/bin/env python3
"""Where the time of one `vbn fit` process goes, stage by stage: what bounds a speed figure.

For each example (examples/paper/NAME, or corpus:NAME for tests/corpus/NAME), runs the
benchmark's command (bench/speed_table: 4 chains of 1,000 warmup + 1,000 draws on 2 threads,
--quiet --summary-json) --repeat times with seeds 1, 2, ..., and reads each run's `timings`
from the summary JSON (load, target, variational, proposal, warmup, sampling, summary and,
where symmetry jumps ran, modes: wall seconds, docs/cli.md) beside the wall time of the whole
process. Also times `vbn check MODEL`, which starts the process, parses the model and exits:
the part of every run that no sampler can remove. Prints one table of medians (milliseconds)
per example and, from them, the ESS per second the chains alone would allow (the run's median
ESS over the median of warmup + sampling), which is the figure's ceiling while every run draws
4 × 2,000 iterations. ESS here is over the summary's parameters (relabelled where the model
has symmetric labelings), not the labeling-free quantities the corpus's window scores.

    python3 bench/stage_profile.py --vbn build/tools/vbn/vbn --examples multimodal --repeat 40
    python3 bench/stage_profile.py --examples corpus:housevotes,corpus:diagnosis --repeat 5

Only the Python standard library is needed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

STAGES = ["load", "target", "variational", "proposal", "warmup", "sampling", "summary", "modes"]


def timed(cmd):
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return wall


def min_ess(summary):
    return min(min(p["ess_bulk"], p["ess_tail"]) for p in summary["parameters"])


def paths(root, example):
    """examples/paper/EXAMPLE, or tests/corpus/MODEL for corpus:MODEL."""
    if example.startswith("corpus:"):
        d = os.path.join(root, "tests", "corpus", example.split(":", 1)[1])
        return os.path.join(d, "model.vbn"), os.path.join(d, "data.csv")
    return (os.path.join(root, "examples", "paper", example + ".vbn"),
            os.path.join(root, "examples", "paper", example + ".csv"))


def profile(vbn, root, example, repeat):
    model, data = paths(root, example)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "summary.json")
        for seed in range(1, repeat + 1):
            start = timed([vbn, "check", model])
            wall = timed([vbn, "fit", model, "--data", data, "--chains", "4", "--threads", "2", "--warmup", "1000",
                          "--draws", "1000", "--seed", str(seed), "--quiet", "--summary-json", path])
            with open(path) as f:
                s = json.load(f)
            # `modes` only where symmetry jumps ran (docs/cli.md): 0 elsewhere.
            rows.append({"check": start, "wall": wall, "ess": min_ess(s), "method": s["method"], "modes": 0.0,
                         **s["timings"]})
    return rows


def report(example, rows):
    med = {k: statistics.median(r[k] for r in rows) for k in ["check", "wall", "ess", *STAGES]}
    chains = statistics.median(r["warmup"] + r["sampling"] for r in rows)
    rest = statistics.median(r["wall"] - sum(r[k] for k in STAGES) for r in rows)  # per run, then the median
    methods = sorted({r["method"] for r in rows})
    print(f"### {example}: `auto` ran {', '.join(methods)}; medians over {len(rows)} runs (seeds 1-{len(rows)})\n")
    print("| part | ms | share of the process |")
    print("|---|---|---|")
    for k in STAGES:
        print(f"| {k} | {1e3 * med[k]:.2f} | {med[k] / med['wall']:.0%} |")
    print(f"| the rest (start, parsing, exit, output) | {1e3 * rest:.2f} | {rest / med['wall']:.0%} |")
    print(f"| whole process | {1e3 * med['wall']:.2f} | 100% |")
    print(f"| `vbn check MODEL` alone (start, parse, exit) | {1e3 * med['check']:.2f} | |")
    print()
    print(f"ESS (min over parameters of min(bulk, tail)): {med['ess']:,.0f}; ESS/s of the whole process "
          f"{med['ess'] / med['wall']:,.0f}; of the chains alone (warmup + sampling, {1e3 * chains:.2f} ms) "
          f"{med['ess'] / chains:,.0f}.\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vbn", default="build/tools/vbn/vbn")
    ap.add_argument("--examples", default="multimodal")
    ap.add_argument("--repeat", type=int, default=40)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    vbn = os.path.abspath(a.vbn)
    commit = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    load = os.getloadavg()
    print(f"Made by `python3 bench/stage_profile.py --examples {a.examples} --repeat {a.repeat}` at commit {commit}, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start.\n")
    for example in a.examples.split(","):
        report(example, profile(vbn, root, example, a.repeat))


if __name__ == "__main__":
    main()
