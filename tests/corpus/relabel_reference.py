"""A within-labeling reference from a long Stan run whose chains do not keep to one labeling.

Usage (after `make_reference.R MODEL DRAWS SEED within DRAWS_CSV`, which wrote MODEL/within.json
and every draw to DRAWS_CSV):

    python3 tests/corpus/relabel_reference.py MODEL DRAWS_CSV

Where a hidden group's copies overlap (sbn2's top units t: their weights U are weakly
identified, and Stan's chains, all started at one mode, cross between the copies that
flipping or exchanging t makes), the parameters within "the labeling the chains started in"
are not defined, and vbn's relabelled draws cannot be compared with Stan's raw ones. Then the
reference is Stan's draws relabelled by vbn's own rule (docs/methods.md, "Relabelling to a
pivot"): the pivot starts at the draw of highest log density; each pass gives every draw the
element of the symmetry group (labelings.py) that carries it nearest the pivot (Euclidean
distance), and the pivot becomes the mean of the relabelled draws, until no draw changes.
This is vbn's rule re-implemented here, applied to an independent sampler's draws: check.py
then compares the two relabelled answers as it does any within-labeling reference. Rewrites
MODEL/within.json's `within_labeling` (mean, sd, R-hat, ESS, Monte Carlo errors of the
relabelled draws) and adds what was done to its provenance. Needs numpy.
"""
import csv
import json
import math
import os
import sys

import numpy as np

import labelings
from check import read_chains
from diagnostics import mcse_sd, summarize

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_PASSES = 100  # vbn's limit (runtime/report/relabel.hpp, relabel_to_pivot)


def read_draws(path):
    """DRAWS_CSV -> (parameter names, draws matrix, chain of each row, lp__ of each row)."""
    with open(path) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    data = np.array([[float(v) for v in r] for r in rows[1:]])
    names = [n for n in header if n not in ("chain", "lp__")]
    cols = [header.index(n) for n in names]
    return names, data[:, cols], data[:, header.index("chain")].astype(int), data[:, header.index("lp__")]


def group_maps(model, names):
    """Every element of the group as (source column per column, sign per column)."""
    index = {n: i for i, n in enumerate(names)}
    out = []
    for lab in labelings.labelings(model):
        m = labelings.mapping(model, names, lab)
        out.append((np.array([index[m[n][0]] for n in names]), np.array([float(m[n][1]) for n in names])))
    return out


def apply_elements(x, element, maps):
    """Row i of x carried by the group element element[i]."""
    y = np.empty_like(x)
    for e in np.unique(element):
        src, sign = maps[e]
        rows = element == e
        y[rows] = x[rows][:, src] * sign
    return y


def relabel(x, lp, maps):
    """vbn's pivot relabelling of the rows of x: (relabelled x, element per row, passes)."""
    pivot = x[int(np.argmax(lp))].copy()
    element = None
    for passes in range(1, MAX_PASSES + 1):
        dist = np.stack([((x[:, src] * sign - pivot) ** 2).sum(axis=1) for src, sign in maps])
        new = np.argmin(dist, axis=0)  # ties to the lowest element, the identity first, as vbn
        y = apply_elements(x, new, maps)
        pivot = y.mean(axis=0)
        if element is not None and np.array_equal(new, element):
            return y, new, passes
        element = new
    raise SystemExit(f"relabelling did not settle in {MAX_PASSES} passes")


def main(model, draws_csv):
    names, x, chain, lp = read_draws(draws_csv)
    maps = group_maps(model, names)
    y, element, passes = relabel(x, lp, maps)
    path = os.path.join(HERE, model, "within.json")
    ref = json.load(open(path))
    chains = sorted(set(chain.tolist()))
    out = []
    for q in ref["within_labeling"]:
        j = names.index(q["name"])
        per_chain = [y[chain == c, j].tolist() for c in chains]
        rhat, ess_bulk, ess_tail = summarize(per_chain)
        out.append(dict(name=q["name"], fn=q["fn"], of=q["of"], mean=float(y[:, j].mean()),
                        sd=float(y[:, j].std(ddof=1)), rhat=rhat, ess_bulk=ess_bulk, ess_tail=ess_tail,
                        mcse_in_sd=1 / math.sqrt(ess_bulk), mcse_sd=mcse_sd(per_chain)))
    prov = ref["provenance"]
    prov["relabelled"] = (f"pivot, as vbn's --relabel pivot: python3 tests/corpus/relabel_reference.py {model} "
                          "DRAWS_CSV (the command's fifth argument)")
    prov["relabel_passes"] = passes
    prov["relabelled_draws"] = int((element != 0).sum())
    prov["within_max_rhat"] = max(q["rhat"] for q in out)
    prov["within_min_ess"] = min(min(q["ess_bulk"], q["ess_tail"]) for q in out)
    ref["within_labeling"] = out
    with open(path, "w") as f:
        json.dump(ref, f, indent=2)
        f.write("\n")
    print(f"{model}: {len(x)} draws, {prov['relabelled_draws']} relabelled, {passes} passes; "
          f"max R-hat {prov['within_max_rhat']:.4f}, min ESS {prov['within_min_ess']:.0f}")


def stack_chains(chains):
    """check.py's read_chains (vbn's --output files) -> (parameter names, draws, lp__), chains stacked."""
    names = [n for n in chains[0] if not n.endswith("__")]
    x = np.array([row for c in chains for row in zip(*(c[n] for n in names))])
    lp = np.array([v for c in chains for v in c["lp__"]])
    return names, x, lp


def self_test(vbn, model="sbn_3x8", seed=1, chains=4):
    """This file's rule against vbn's, on vbn's draws of MODEL. vbn's chains start together and
    keep to one labeling, so vbn's --relabel pivot moves none of them, and the rule is exercised
    by carrying every draw but the pivot's first one (the highest lp__) to a random labeling of
    the group (labelings.py): relabelled here, the draws must come back to vbn's relabelled
    draws, every one, to the CSV files' six digits."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for rule in ("none", "pivot"):
            # --draws fixes the length: without it the two runs could extend differently.
            subprocess.run([vbn, "fit", os.path.join(HERE, model, "model.vbn"), "--data",
                            os.path.join(HERE, model, "data.csv"), "--seed", str(seed), "--draws", "1000",
                            "--chains", str(chains), "--relabel", rule, "--quiet",
                            "--output", os.path.join(tmp, rule + ".csv")], check=True, stdout=subprocess.DEVNULL)
        names, raw, lp = stack_chains(read_chains(os.path.join(tmp, "none")))
        names_p, vbn_relabelled, _ = stack_chains(read_chains(os.path.join(tmp, "pivot")))
    assert names == names_p
    maps = group_maps(model, names)
    rng = np.random.default_rng(seed)
    scramble = rng.integers(0, len(maps), size=len(raw))
    scramble[int(np.argmax(lp))] = 0
    y, element, passes = relabel(apply_elements(raw, scramble, maps), lp, maps)
    worst = float(np.abs(y - vbn_relabelled).max())
    scale = float(np.abs(vbn_relabelled).max())
    print(f"{model}: {len(raw)} draws, {int((scramble != 0).sum())} carried to other labelings and "
          f"{int((element != 0).sum())} relabelled here in {passes} passes; largest difference from vbn's "
          f"relabelled draws {worst:.2e} (largest value {scale:.2f})")
    # A draw given the wrong element would differ by the distance between two copies, about the
    # weights' own size; the files' rounding is 1e-6 of it.
    if worst > 1e-5 * max(scale, 1.0):
        raise SystemExit("self-test: this file's relabelling differs from vbn's --relabel pivot")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        self_test(sys.argv[2])
    elif len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    else:
        main(sys.argv[1], sys.argv[2])
