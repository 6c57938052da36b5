#!/usr/bin/env bash
# The paper's Fig. 14-16 for the multimodal and bimodal examples, as PNG files in OUTDIR.
#   bench/multimodal_figures.sh [OUTDIR] [build dir]     (run from the source tree)
set -euo pipefail
out=${1:-docs/img}
build=${2:-build}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/multimodal_figures" "$tmp" multimodal bimodal | tee "$tmp/table.txt"
for name in multimodal bimodal; do
  gnuplot -e "dir='$tmp'; name='$name'" bench/multimodal_figures.gp
  cp "$tmp/$name.png" "$out/$name-fig14-16.png"
done
