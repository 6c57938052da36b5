#!/usr/bin/env bash
# Seeds the fuzzers' corpora from the examples and the golden error tests:
#   fuzz/make-corpus.sh OUTDIR   -> OUTDIR/model, OUTDIR/csv, OUTDIR/model_data
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
mkdir -p "$out/model" "$out/csv" "$out/model_data"
# Left out: golden cases about size limits. Each builds millions of weights (seconds an
# execution under the sanitizers), and the mutations of one such seed took most of a run's
# time: fuzz_model ran at about 260 executions a second with it, 2,300 without.
slow="self_loop_thousands_of_fixed_weights.vbn"
for f in "$src"/examples/*/*.vbn "$src"/tests/lang/bad/*.vbn; do
  case " $slow " in *" $(basename "$f") "*) continue ;; esac
  cp "$f" "$out/model/$(basename "$(dirname "$f")")_$(basename "$f")"
done
cp "$src"/fuzz/seeds/csv/* "$out/csv/"
# Model and data pairs: each example model with the first rows of its CSV.
for m in "$src"/examples/*/*.vbn; do
  c="${m%.vbn}.csv"
  [ -f "$c" ] || continue
  { cat "$m"; printf '\n%%%%\n'; head -n 30 "$c"; } > "$out/model_data/$(basename "${m%.vbn}")"
done
