#!/usr/bin/env bash
# Writes tests/corpus/RESULTS.md: check.py's table for today's vbn on every model that has a
# reference. Usage: bash tests/corpus/make_results.sh [VBN] [METHODS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vbn=${1:-build/tools/vbn/vbn}
methods=${2:-auto,nuts,vb}
# The longer runs below are of the sampling methods alone: `vbn vb` takes no --draws, so its
# rows there would repeat the table's.
fit_methods=$(echo "$methods" | tr ',' '\n' | grep -vx vb | paste -sd, -)
{
  echo "# vbn against the corpus"
  echo
  echo "Made by \`bash tests/corpus/make_results.sh $vbn $methods\`, i.e."
  echo "\`python3 tests/corpus/check.py --vbn $vbn --methods $methods\`, on $(date -u +%Y-%m-%d)"
  # Seconds depend on what else runs: the load average at the start is recorded beside them.
  echo "with vbn $(git -C "$here" rev-parse --short HEAD), load average $(cut -d' ' -f1 /proc/loadavg) at the start on $(nproc) cores. Tolerances: mean"
  echo "within 0.1 reference sd (vb 0.15), sd within 10% beyond two Monte Carlo standard errors"
  echo "(fit only), R-hat <= 1.01, ESS >= 400 (README.md). The references' own quality is in each"
  echo "reference.json's provenance and the table at the end."
  echo
  python3 "$here/check.py" --vbn "$vbn" --methods "$methods"
  status=$?
  echo
  echo "exit status of check.py: $status"
  echo
  if [ -n "$fit_methods" ]; then
    # At 1,000 draws per chain sbn_3x8's min ESS is about 500: each mean's Monte Carlo error is
    # then about 0.045 sd, and the largest of 32 errors reaches 0.1 sd on some seeds with no error
    # beyond Monte Carlo's (the column above). The release tests run it at 4,000 (tests/CMakeLists.txt).
    echo "sbn_3x8 at 4,000 draws per chain, as the release tests run it (\`--models sbn_3x8 --draws 4000\`):"
    echo
    python3 "$here/check.py" --vbn "$vbn" --methods "$fit_methods" --models sbn_3x8 --draws 4000
    echo
    echo "exit status of check.py: $?"
    echo
    # sbn2's within-labeling row has the same limit at its default length (min ESS about 500
    # on U and W): its largest of 41 mean errors reached 0.128 sd at seed 2, 0.081 and 0.057 at
    # seeds 1 and 3, and at 4,000 draws 0.037-0.057 at seeds 1-3.
    echo "sbn2 at 4,000 draws per chain (\`--models sbn2 --draws 4000\`):"
    echo
    python3 "$here/check.py" --vbn "$vbn" --methods "$fit_methods" --models sbn2 --draws 4000
    echo
    echo "exit status of check.py: $?"
    echo
  fi
  echo "| reference | draws per chain | max R-hat | min ESS | max MC error (sd) |"
  echo "|---|---|---|---|---|"
  for f in "$here"/*/reference.json; do
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["provenance"]
print("| %s | %d | %.4f | %.0f | %.3f |" % tuple(p[k] for k in ("model", "draws", "max_rhat", "min_ess", "max_mcse_in_sd")))' "$f"
  done
} > "$here/RESULTS.md"
