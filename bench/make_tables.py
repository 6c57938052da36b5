#!/usr/bin/env python3
"""Writes the speed tables from the committed benchmark windows.

Each window is a folder bench/results/windows/<UTC date-time>/ made by bench/run_window.sh:

    machine.tsv   the machine's facts (commit, CPU, nproc, load averages, versions)
    peers.tsv     bench/peers/run_peers.R's rows: Stan and JAGS, each program, sampler time
    vbn.tsv       bench/speed_table's rows: one per `vbn fit` run
    corpus_peers.tsv, corpus_vbn.tsv   the same for the hidden-variable corpus (run_corpus.R,
                  speed_table --corpus), where a window has them

From all of them (and the references: bench/reference/EXAMPLE.json for the examples, the
quantities of tests/corpus/MODEL/reference.json for the corpus) this script writes

    bench/results/speed_table.md   every window in full, newest first
    bench/README.md, README.md     the headline table, between `<!-- speed-table:begin -->` and
                                   `<!-- speed-table:end -->`

The metric is the same for everyone: the smallest over the parameters of min(bulk-ESS,
tail-ESS) per second, of the whole `vbn fit` process for vbn and of the sampler for Stan and
JAGS (their compilation and R's start-up apart). Within a window, a method's or a program's
ESS/s is the median over its runs (seeds 1, 2, ...) and its R-hat the largest; its errors are
the RMSEs over the runs of the posterior means and sds against the reference, in reference sds
(the largest over the parameters), and 1 / (RMSE of means^2 x mean time) is the precision per
second they imply (an ESS/s measured from the errors). A peer's figure is that of its faster
program (row by row, or over distinct rows with counts).

    python3 bench/make_tables.py            # rewrite the three files
    python3 bench/make_tables.py --check    # exit 1 (with a diff) if any is not what the
                                            # windows give; nothing is written
    python3 bench/make_tables.py --self-test  # its own checks on a made-up window

Only the Python standard library is needed.
"""
import argparse
import difflib
import json
import os
import statistics
import sys

BEGIN = "<!-- speed-table:begin -->"
END = "<!-- speed-table:end -->"
NOTE = "<!-- made by bench/make_tables.py from bench/results/windows: rerun it, do not edit this section -->"

LABELS = {"unimodal_d1": "1 parent", "unimodal_d5": "5 parents", "unimodal_d10": "10 parents",
          "unimodal_d20": "20 parents", "unimodal_d50": "50 parents",
          "multimodal": "multimodal (hidden parent)", "bimodal": "bimodal (hidden parent)",
          "sbn_3x8": "SBN 3×8 (hidden causes)", "diagnosis": "diagnosis (2 hidden diseases)",
          "survey": "latent-class survey", "occupancy": "occupancy (hidden presence)",
          "sbn2": "two-layer SBN", "housevotes": "House votes latent class"}
PEERS = {"stan": "Stan NUTS", "jags": "JAGS"}
PROGRAMS = {"U": "rows", "M": "rows", "Uc": "counts", "Mc": "counts"}
# The corpus's programs (bench/peers/run_corpus.R): Stan sums the hidden values out over
# distinct rows with counts, JAGS samples them row by row.
CORPUS_PROGRAMS = {("stan", "model"): "counts, hidden summed out", ("jags", "model"): "rows, hidden sampled",
                   ("stan", "fast"): "counts, hidden summed out, matrix form"}


def fail(message):
    sys.exit(f"make_tables.py: {message}")


def read_tsv(path):
    """Rows of a TSV with a header line, as dicts; lines starting with # are skipped."""
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    if not lines:
        fail(f"{path}: empty")
    header = lines[0].split("\t")
    rows = []
    for n, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        if len(cells) != len(header):
            fail(f"{path}: row {n}: {len(cells)} columns, the header has {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def read_all(window, name):
    """The rows of a window's NAME and of its corpus_NAME, where it has them (one at least)."""
    paths = [p for p in (os.path.join(window, name), os.path.join(window, "corpus_" + name)) if os.path.exists(p)]
    if not paths:
        fail(f"{window}: neither {name} nor corpus_{name}")
    return [r for p in paths for r in read_tsv(p)]


def read_machine(path):
    facts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("\t")
            facts[key] = value
    return facts


def floats(text):
    return [float(x) for x in text.split(",") if x]


def rmse(runs, key, ref):
    """The largest over the parameters of the RMSE over runs of the means (key "mean") or sds
    (key "sd") against the reference, in reference sds."""
    if ref is None:
        return None
    worst = 0.0
    for j, (m, s) in enumerate(zip(ref["mean"], ref["sd"])):
        target = m if key == "mean" else s
        errs = [(r[key][j] - target) / s for r in runs]
        worst = max(worst, (sum(e * e for e in errs) / len(errs)) ** 0.5)
    return worst


def aggregate(runs, ref, **fields):
    """One method's or program's runs in a window: medians of time and ESS, the largest R-hat,
    the RMSEs over runs, and the precision per second they imply, 1 / (RMSE^2 time)."""
    for r in runs:
        if ref is not None and len(r["mean"]) != len(ref["mean"]):
            fail(f"{len(r['mean'])} means against a reference of {len(ref['mean'])} ({fields})")
    med = {k: statistics.median(r[k] for r in runs) for k in ("time", "bulk", "tail", "ess", "ess_s")}
    err_mean, err_sd = rmse(runs, "mean", ref), rmse(runs, "sd", ref)
    prec_s = None if not err_mean else 1 / (err_mean ** 2 * statistics.mean(r["time"] for r in runs))
    return dict(fields, runs=len(runs), rhat=max(r["rhat"] for r in runs), err=err_mean, err_sd=err_sd,
                prec_s=prec_s, **med)


def run_of(r, time_key):
    return {"time": float(r[time_key]), "bulk": float(r["ess_bulk"]), "tail": float(r["ess_tail"]),
            "ess": float(r["ess"]), "ess_s": float(r["ess_per_s"]), "rhat": float(r["rhat"]),
            "mean": floats(r["mean"]), "sd": floats(r["sd"])}


def program_label(peer, program):
    return CORPUS_PROGRAMS.get((peer, program)) or PROGRAMS.get(program, program)


def compiled_name(p):
    """The Stan program a peer row ran, as run_peers.R and run_corpus.R name it."""
    if p["program"] == "model":
        return f"{p['example']}/model"
    return {"fast": f"{p['example']} (matrix form)"}.get(p["program"], p["program"])


def corpus_references(corpus_dir):
    """tests/corpus/MODEL/reference.json as make_tables' references: the means and sds of its
    quantities, in the order bench/speed_table and run_corpus.R write them."""
    refs = {}
    for name in sorted(os.listdir(corpus_dir)) if os.path.isdir(corpus_dir) else []:
        path = os.path.join(corpus_dir, name, "reference.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                qs = json.load(f)["quantities"]
            refs[name] = {"names": [q["name"] for q in qs], "mean": [q["mean"] for q in qs],
                          "sd": [q["sd"] for q in qs]}
    return refs


def load_window(path, refs):
    """A window's vbn methods and peers' programs, aggregated per example."""
    vbn, peer_runs, picks = {}, {}, {}
    for r in read_all(path, "vbn.tsv"):
        vbn.setdefault((r["example"], r["method"]), []).append(run_of(r, "wall_s"))
        picks.setdefault((r["example"], r["method"]), []).append(r["picked"])
    methods = {}
    for (example, method), runs in vbn.items():
        picked = statistics.mode(picks[(example, method)])
        methods[(example, method)] = aggregate(
            runs, refs.get(example), example=example, method=method, picked=picked,
            label=f"{method} ({picked})" if method == "auto" else method)
    rows = {}
    for r in read_all(path, "peers.tsv"):
        key = (r["example"], r["peer"], r["program"])
        peer_runs.setdefault(key, []).append(run_of(r, "sampler_s"))
        rows[key] = r
    peers = {}
    for (example, peer, program), runs in peer_runs.items():
        r = rows[(example, peer, program)]
        peers[(example, peer, program)] = aggregate(
            runs, refs.get(example), example=example, peer=peer, program=program,
            compile=float(r["compile_s"]),
            label=f"{PEERS[peer]}, {program_label(peer, program)} ({r['rows']})")
    best = {}
    for p in peers.values():
        key = (p["example"], p["peer"])
        if key not in best or p["ess_s"] > best[key]["ess_s"]:
            best[key] = p
    examples = list(dict.fromkeys(e for e, _ in methods))
    return {"name": os.path.basename(path), "machine": read_machine(os.path.join(path, "machine.tsv")),
            "methods": methods, "peers": peers, "best": best, "examples": examples}


def load_windows(results, reference_dir, corpus_dir):
    refs = corpus_references(corpus_dir)
    for name in sorted(os.listdir(reference_dir)):
        if name.endswith(".json"):
            with open(os.path.join(reference_dir, name), encoding="utf-8") as f:
                refs[name[:-5]] = json.load(f)
    top = os.path.join(results, "windows")
    names = sorted(n for n in os.listdir(top) if os.path.isdir(os.path.join(top, n))) if os.path.isdir(top) else []
    if not names:
        fail(f"{top}: no windows")
    return [load_window(os.path.join(top, n), refs) for n in names]


def num(x, digits=0):
    return "—" if x is None else f"{x:,.{digits}f}"


def times(x):
    if x is None:
        return "—"
    return f"{x:,.0f}" if x >= 10 else f"{x:.2f}" if x < 1 else f"{x:.1f}"


def ratio(a, peer):
    return None if peer is None else a / peer["ess_s"]


def latest_with(windows, example):
    """The newest window that ran `auto` on EXAMPLE."""
    return next((w for w in reversed(windows) if (example, "auto") in w["methods"]), None)


def versus(m, peer):
    """× a peer, and where the peer's chains did not converge (R-hat > 1.01), its R-hat."""
    text = times(ratio(m["ess_s"], peer))
    return text if peer is None or peer["rhat"] <= 1.01 else f"{text} (R-hat {peer['rhat']:.3f})"


def headline(windows):
    """Each example's `auto` row from the newest window that ran it, with × Stan over all windows."""
    examples = list(dict.fromkeys(e for w in reversed(windows) for e in w["examples"]))
    out = ["| example | `auto` picks | ESS/s | × Stan | × JAGS | RMSE of means (ref. sd) | max R-hat "
           "| error-based ESS/s × Stan | × Stan, all windows: median (range, windows) | window |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    used = {}
    for example in examples:
        w = latest_with(windows, example)
        if w is None:
            continue
        used[w["name"]] = w
        m = w["methods"][(example, "auto")]
        stan, jags = w["best"].get((example, "stan")), w["best"].get((example, "jags"))
        ratios = [ratio(v["methods"][(example, "auto")]["ess_s"], v["best"].get((example, "stan")))
                  for v in windows if (example, "auto") in v["methods"]]
        ratios = [r for r in ratios if r is not None]
        spread = "—" if not ratios else (f"{times(statistics.median(ratios))} ({times(min(ratios))}–"
                                         f"{times(max(ratios))}, {len(ratios)})")
        prec = None if stan is None or not m["prec_s"] or not stan["prec_s"] else m["prec_s"] / stan["prec_s"]
        out.append(f"| {LABELS.get(example, example)} | {m['picked']} | {num(m['ess_s'])} | "
                   f"{versus(m, stan)} | {versus(m, jags)} | {num(m['err'], 3)} | "
                   f"{m['rhat']:.3f} | {times(prec)} | {spread} | {w['name']} |")
    out += ["", f"Each example from the newest of the {len(windows)} windows that ran it (every window in full in "
            f"[bench/results/speed_table.md]({{link}})). A peer's R-hat is shown where its chains did not "
            "converge (above 1.01). Windows:"]
    for name, w in sorted(used.items()):
        facts = w["machine"]
        out.append(f"- {name}: commit {facts.get('commit', '?')}, {facts.get('nproc', '?')} cores, load average "
                   f"{facts.get('load_before', '?')} before, {facts.get('load_after', '?')} after (1, 5, 15 minutes).")
    return out


def window_table(w):
    out = [f"### Window {w['name']}", ""]
    for key in ("commit", "cpu", "nproc", "vbn", "R", "rstan", "jags", "load_before", "load_between",
                "load_resumed", "load_corpus", "load_corpus_between", "load_after", "started", "finished", "settings", "note"):
        if key in w["machine"]:
            out.append(f"- {key.replace('_', ' ')}: {w['machine'][key]}")
    out += ["", "| example | method | runs | time s | min bulk-ESS | min tail-ESS | ESS | ESS/s | × Stan | × JAGS "
            "| RMSE of means | RMSE of sds | error-based ESS/s | max R-hat |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for example in w["examples"]:
        stan, jags = w["best"].get((example, "stan")), w["best"].get((example, "jags"))
        rows = [m for (e, _), m in w["methods"].items() if e == example]
        rows += [p for (e, _, _), p in sorted(w["peers"].items()) if e == example]
        for r in rows:
            out.append(f"| {example} | {r['label']} | {r['runs']} | {r['time']:.4f} | {num(r['bulk'])} | "
                       f"{num(r['tail'])} | {num(r['ess'])} | {num(r['ess_s'])} | {times(ratio(r['ess_s'], stan))} | "
                       f"{times(ratio(r['ess_s'], jags))} | {num(r['err'], 3)} | {num(r['err_sd'], 3)} | "
                       f"{num(r['prec_s'])} | {r['rhat']:.3f} |")
    compiles = sorted({(compiled_name(p), p["compile"])
                       for p in w["peers"].values() if p["peer"] == "stan"})
    if compiles:
        out += ["", "Stan's compilation, not in the times: " +
                ", ".join(f"{prog}.stan {secs:.1f} s" for prog, secs in compiles) + "."]
    return out


def speed_table_md(windows):
    lines = ["# Speed tables: every window", "", NOTE, "",
             "Made by `python3 bench/make_tables.py` from the windows in [windows/](windows/), newest first. "
             "Time: the whole `vbn fit` process (median over its runs) for vbn's methods, the sampler "
             "(sum over chains / 2 cores) for Stan and JAGS; ESS: the smallest over the parameters of "
             "min(bulk-ESS, tail-ESS); × Stan and × JAGS against the faster program of each peer "
             "(row by row, or over distinct rows with counts; the number of rows each evaluates in "
             "brackets); medians over the runs (seeds 1, 2, ...). RMSE of means and of sds: over the "
             "runs, against the reference (bench/reference/; for the hidden-variable corpus, "
             "tests/corpus/MODEL/reference.json's quantities, which do not depend on a hidden node's "
             "labeling), in reference sds, the largest over the "
             "parameters; error-based ESS/s = 1 / (RMSE of means² × mean time), the effective draws "
             "per second the errors imply. R-hat: the largest over parameters and runs.", ""]
    for w in reversed(windows):
        lines += window_table(w) + [""]
    return "\n".join(lines)


def section(windows, link):
    lines = [BEGIN, NOTE, ""] + [l.replace("{link}", link) for l in headline(windows)] + [END]
    return "\n".join(lines) + "\n"


def splice(text, new_section, path):
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < 0 or end < begin:
        fail(f"{path}: the markers {BEGIN} and {END} are missing or out of order")
    end += len(END)
    if text[end:end + 1] == "\n":
        end += 1
    return text[:begin] + new_section + text[end:]


def self_test():
    """A made-up window with only corpus rows: its reference comes from the corpus folder, a
    peer above R-hat 1.01 is marked, and means of the wrong length are refused."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        corpus, refdir, win = (os.path.join(tmp, d) for d in ("corpus", "reference", "results/windows/W"))
        for d in (os.path.join(corpus, "toy"), refdir, win):
            os.makedirs(d)
        with open(os.path.join(corpus, "toy", "reference.json"), "w") as f:
            json.dump({"quantities": [{"name": "|w|", "mean": 1.0, "sd": 0.5}]}, f)
        with open(os.path.join(win, "machine.tsv"), "w") as f:
            f.write("commit\tabc\n")
        head = "example\tmethod\tpicked\tseed\twall_s\tess_bulk\tess_tail\tess\tess_per_s\trhat\tmean\tsd\n"
        with open(os.path.join(win, "corpus_vbn.tsv"), "w") as f:
            f.write(head + "toy\tauto\tnuts\t1\t1.0\t900\t800\t800\t800\t1.002\t1.1\t0.5\n")
        with open(os.path.join(win, "corpus_peers.tsv"), "w") as f:
            f.write("\t".join(["example", "peer", "program", "rows", "seed", "sampler_s", "call_s", "compile_s",
                               "ess_bulk", "ess_tail", "ess", "ess_per_s", "rhat", "mean", "sd"]) + "\n")
            f.write("toy\tstan\tfast\t10\t1\t2.0\t4\t30\t500\t400\t400\t200\t1.002\t1.0\t0.5\n")
            f.write("toy\tjags\tmodel\t20\t1\t8.0\t8\t0\t50\t40\t40\t5\t1.05\t0.9\t0.6\n")
        windows = load_windows(os.path.join(tmp, "results"), refdir, corpus)
        m = windows[0]["methods"][("toy", "auto")]
        assert abs(m["err"] - 0.2) < 1e-12, m["err"]  # (1.1 - 1.0) / 0.5
        row = next(l for l in headline(windows) if l.startswith("| toy"))
        assert "| 4.0 | 160 (R-hat 1.050) |" in row, row
        assert "matrix form" in windows[0]["best"][("toy", "stan")]["label"]
        with open(os.path.join(win, "corpus_vbn.tsv"), "a") as f:
            f.write("toy\tauto\tnuts\t2\t1.0\t900\t800\t800\t800\t1.002\t1.1,2\t0.5,1\n")
        try:
            load_windows(os.path.join(tmp, "results"), refdir, corpus)
            raise AssertionError("means of the wrong length were accepted")
        except SystemExit as e:
            assert "against a reference of 1" in str(e), e
    print("make_tables.py: self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "results"), help="the directory of the results")
    ap.add_argument("--reference-dir", default=os.path.join(here, "reference"))
    ap.add_argument("--corpus", default=os.path.join(root, "tests", "corpus"),
                    help="the corpus, whose references score its models")
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 if a file differs")
    a = ap.parse_args()
    windows = load_windows(a.results, a.reference_dir, a.corpus)

    targets = {os.path.join(a.results, "speed_table.md"): lambda old: speed_table_md(windows)}
    for path, link in ((os.path.join(here, "README.md"), "results/speed_table.md"),
                       (os.path.join(root, "README.md"), "bench/results/speed_table.md")):
        targets[path] = lambda old, path=path, link=link: splice(old, section(windows, link), path)
    status = 0
    for path, make in targets.items():
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        new = make(old)
        if new == old:
            continue
        if a.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), path,
                                                       path + " (from the windows)"))
            print(f"make_tables.py: {path} is not what the windows give; run python3 bench/make_tables.py",
                  file=sys.stderr)
            status = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    return status


if __name__ == "__main__":
    sys.exit(main())
