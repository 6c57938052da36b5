#!/usr/bin/env python3
"""Writes the scale table into bench/scale.md from the committed results.

The table lives between the lines `<!-- scale-table:begin -->` and `<!-- scale-table:end -->`
of bench/scale.md and is made from bench/results/scale.tsv, which bench/scale.sh appends to
(one line per stage of a run: date, commit, case, rows, columns, stage, wall seconds, CPU
seconds (user + system; NA where not measured), peak RSS in MB, 1-minute load average
before the stage, cores).

    python3 bench/scale_table.py            # rewrite the table in bench/scale.md
    python3 bench/scale_table.py --check    # exit 1 (with a diff) if the table is not what
                                            # the results give; nothing is written

Only the Python standard library is needed.
"""
import argparse
import csv
import difflib
import os
import sys

BEGIN = "<!-- scale-table:begin -->"
END = "<!-- scale-table:end -->"
CASES = {"logreg": "real covariates, no row repeats", "wide": "binary columns", "many": "nodes (one parent)",
         "stream": "binary columns, values missing, few distinct rows",
         "shards": "real covariates, rows sharded over MPI ranks"}
HEADER = ["date (UTC)", "commit", "input", "stage", "wall s", "CPU s", "peak RSS MB", "load (cores)"]


def read_results(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    want = {"date", "commit", "case", "rows", "columns", "stage", "seconds", "cpu_seconds", "peak_rss_mb", "load1", "cores"}
    if rows and not want <= set(rows[0]):
        sys.exit(f"{path}: columns {sorted(want - set(rows[0]))} missing")
    return rows


def describe(r):
    rows, cols = int(r["rows"]), int(r["columns"])
    what = CASES.get(r["case"], r["case"])
    if r["case"] == "many":
        return f"{cols:,} {what}, {rows:,} rows"
    return f"{rows:,} rows × {cols} columns ({what})"


def table(rows):
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    previous = None
    for r in rows:
        run = (r["date"][:10], r["commit"], describe(r))
        cells = list(run) if run != previous else ["", "", ""]
        previous = run
        cpu = r["cpu_seconds"]
        cells += [r["stage"], f'{float(r["seconds"]):.2f}', cpu if cpu == "NA" else f"{float(cpu):.2f}",
                  f'{float(r["peak_rss_mb"]):.0f}', f'{r["load1"]} ({r["cores"]})']
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    doc_path = os.path.join(here, "scale.md")
    rows = read_results(os.path.join(here, "results", "scale.tsv"))
    with open(doc_path) as f:
        doc = f.read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        sys.exit(f"{doc_path}: needs one {BEGIN} line before one {END} line")
    head, rest = doc.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + table(rows) + END + tail
    if args.check:
        if new != doc:
            sys.stdout.writelines(difflib.unified_diff(doc.splitlines(True), new.splitlines(True), doc_path, "generated"))
            sys.exit(1)
        return
    with open(doc_path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
