#!/usr/bin/env python3
"""Writes the speed table into bench/README.md from the committed results.

The speed table lives in one place: the section of bench/README.md between the lines
`<!-- speed-table:begin -->` and `<!-- speed-table:end -->`, made by this script from

    bench/results/speed_table.md   the output of bench/speed_table (vbn's rows, and the peers'
                                   rows it copied from the peers' file)
    bench/results/peers.tsv        the output of bench/peers/run_peers.R (Stan's and JAGS's runs)

Every vbn row's "× Stan NUTS" is recomputed from its ESS/s and Stan's ESS/s in peers.tsv, and
every peer row is checked against peers.tsv, so the two files cannot disagree unnoticed.

    python3 bench/make_tables.py            # rewrite the section of bench/README.md
    python3 bench/make_tables.py --check    # exit 1 (with a diff) if the section is not what
                                            # the results give; nothing is written

Only the Python standard library is needed.
"""
import argparse
import difflib
import os
import sys

BEGIN = "<!-- speed-table:begin -->"
END = "<!-- speed-table:end -->"

# The goals the speed table is read against: `auto`'s bulk-ESS per second of the whole run,
# as a multiple of Stan's NUTS on the same example.
GOALS = {"unimodal_d1": 100, "unimodal_d5": 100, "unimodal_d10": 100, "unimodal_d20": 100,
         "unimodal_d50": 30, "multimodal": 100}

# Display names of the examples (all in examples/paper/).
LABELS = {"unimodal_d1": "1 parent", "unimodal_d5": "5 parents", "unimodal_d10": "10 parents",
          "unimodal_d20": "20 parents", "unimodal_d50": "50 parents",
          "multimodal": "multimodal (hidden parent)", "bimodal": "bimodal (hidden parent)"}

PEER_LABELS = {"Stan NUTS": "stan_nuts", "JAGS": "jags"}
HEADER = ["example", "method", "wall s", "min bulk-ESS", "ESS/s", "× Stan NUTS",
          "max error (ref. sd)", "max R-hat"]


def fail(message):
    sys.exit(f"make_tables.py: {message}")


def number(text):
    """A table cell as a float: '1,835,156' -> 1835156.0; '—' -> None."""
    text = text.strip()
    if text in ("—", "-", ""):
        return None
    return float(text.replace(",", ""))


def read_speed_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("|") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells == HEADER:
                continue
            if len(cells) != len(HEADER):
                fail(f"{path}:{n}: expected {len(HEADER)} columns, found {len(cells)}")
            rows.append(dict(zip(HEADER, cells), line=n))
    if not rows:
        fail(f"{path}: no rows")
    return rows


def read_peers(path):
    peers = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 6:
                fail(f"{path}:{n}: expected at least 6 tab-separated columns")
            peers[(cols[0], cols[1])] = {"wall": float(cols[2]), "ess": float(cols[3]),
                                         "ess_s": float(cols[4]), "rhat": float(cols[5])}
    return peers


def close(a, b, digits):
    """a equals b as printed with `digits` decimals (b the printed value)."""
    return abs(a - b) <= 0.5 * 10 ** -digits + 1e-9 * abs(b)


def check_consistency(rows, peers, table_path, peers_path):
    """The ratios and the peers' rows of the table agree with peers.tsv."""
    for r in rows:
        stan = peers.get((r["example"], "stan_nuts"))
        ratio = number(r["× Stan NUTS"])
        where = f"{table_path}:{r['line']}"
        if r["method"] in PEER_LABELS:
            p = peers.get((r["example"], PEER_LABELS[r["method"]]))
            if p is None:
                fail(f"{where}: no {r['method']} row for {r['example']} in {peers_path}")
            if not (close(p["wall"], number(r["wall s"]), 3) and close(p["ess_s"], number(r["ESS/s"]), 1)):
                fail(f"{where}: {r['method']} on {r['example']} differs from {peers_path}")
            continue
        if stan is None:
            if ratio is not None:
                fail(f"{where}: a ratio to Stan, but {peers_path} has no Stan row for {r['example']}")
            continue
        expected = number(r["ESS/s"]) / stan["ess_s"]
        if ratio is None or not close(expected, ratio, 1):
            fail(f"{where}: × Stan NUTS is {r['× Stan NUTS']}, but {r['ESS/s']} / {stan['ess_s']} "
                 f"(Stan's ESS/s in {peers_path}) is {expected:.1f}")


def auto_table(rows, peers):
    out = ["| example | `auto` picks | vbn ESS/s | Stan ESS/s | × Stan | goal | met |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["method"].startswith("auto") or r["example"] not in GOALS:
            continue
        stan = peers[(r["example"], "stan_nuts")]
        ratio = number(r["ESS/s"]) / stan["ess_s"]
        picks = r["method"].removeprefix("auto").strip(" ()")
        goal = GOALS[r["example"]]
        out.append(f"| {LABELS.get(r['example'], r['example'])} | {picks} | {r['ESS/s']} | "
                   f"{stan['ess_s']:,.0f} | {ratio:,.0f} | {goal} | {'yes' if ratio >= goal else '**no**'} |")
    return out


def full_table(rows):
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows:
        out.append("| " + " | ".join(r[h] for h in HEADER) + " |")
    return out


def section(rows, peers):
    lines = [BEGIN,
             "<!-- made by bench/make_tables.py from bench/results/speed_table.md and "
             "bench/results/peers.tsv: edit those and rerun it, not this section -->",
             "",
             "`auto` against Stan's NUTS (bulk-ESS per second of the whole run; the goal is the "
             "least multiple of Stan's aimed for):",
             ""]
    lines += auto_table(rows, peers)
    lines += ["", "Every method, with the peers (bimodal has no peer run):", ""]
    lines += full_table(rows)
    lines.append(END)
    return "\n".join(lines) + "\n"


def splice(readme_text, new_section, readme_path):
    begin = readme_text.find(BEGIN)
    end = readme_text.find(END)
    if begin < 0 or end < 0 or end < begin:
        fail(f"{readme_path}: the markers {BEGIN} and {END} are missing or out of order")
    end += len(END)
    if readme_text[end:end + 1] == "\n":
        end += 1
    return readme_text[:begin] + new_section + readme_text[end:]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(here, "results"), help="the directory of the results")
    ap.add_argument("--readme", default=os.path.join(here, "README.md"), help="the file holding the table")
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 if the section differs")
    a = ap.parse_args()

    table_path = os.path.join(a.results, "speed_table.md")
    peers_path = os.path.join(a.results, "peers.tsv")
    rows = read_speed_table(table_path)
    peers = read_peers(peers_path)
    check_consistency(rows, peers, table_path, peers_path)

    with open(a.readme, encoding="utf-8") as f:
        old = f.read()
    new = splice(old, section(rows, peers), a.readme)
    if a.check:
        if new != old:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       a.readme, a.readme + " (from the results)"))
            print(f"make_tables.py: {a.readme} is not what the results give; run python3 bench/make_tables.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != old:
        with open(a.readme, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
