#!/usr/bin/env bash
# Regenerates the data of examples/paper/ with `vbn simulate` and fixed seeds.
#   scripts/make-paper-data.sh [path/to/vbn]
set -euo pipefail
vbn=${1:-build/tools/vbn/vbn}
cd "$(dirname "$0")/../examples/paper"
vbn=$(cd - >/dev/null && realpath "$vbn")
for d in 1 5 10 20 50; do
  "$vbn" simulate "unimodal_d$d.vbn" --rows 1000 --seed $((100 + d)) --params "unimodal_d$d.params.json" --output "unimodal_d$d.csv"
done
"$vbn" simulate multimodal.vbn --rows 50 --seed 52 --params multimodal.params.json --output multimodal.csv
"$vbn" simulate multimodal.vbn --rows 50 --seed 52 --params multimodal.params.json --include-hidden --output multimodal_with_hidden.csv
"$vbn" simulate sbn_3x8.vbn --rows 200 --seed 38 --params sbn_3x8.params.json --output sbn_3x8.csv
# The same model on a data set whose posterior has two separated modes (seed found by a scan).
"$vbn" simulate bimodal.vbn --rows 50 --seed 4 --params bimodal.params.json --output bimodal.csv
