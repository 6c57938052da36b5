#!/usr/bin/env bash
# Scale: time and peak memory (RSS) of `vbn` on large inputs, per stage.
#   bench/scale.sh path/to/vbn [ROWS] [NODES]      (defaults: 1000000 rows, 10000 nodes)
#
# 1. ROWS rows × 50 binary columns: node x[10] ~ bernoulli(0.5); node y[40] ~ logistic(b + W x).
# 2. NODES nodes: one parent shared by NODES - 1 children, 1000 rows.
# Stages: load (vbn check --data), vb, fit with 1000 draws (1 chain, 200 warmup), with --output.
# Memory should grow with the number of distinct rows (patterns) and nodes, not with ROWS.
set -euo pipefail
vbn=$(realpath "$1")
rows=${2:-1000000}
nodes=${3:-10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 1; }

measure() {  # measure LABEL command...
  local label=$1
  shift
  /usr/bin/time -v "$@" >"$tmp/out" 2>"$tmp/time" || { cat "$tmp/time" >&2; exit 1; }
  local wall rss
  wall=$(grep 'Elapsed (wall clock)' "$tmp/time" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$tmp/time" | awk '{print $NF}')
  printf '%-34s wall %10s   peak RSS %8.1f MB\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
}

wide=$tmp/wide.vbn
cat >"$wide" <<'M'
node x[10] ~ bernoulli(0.5);
node y[40] ~ logistic(b + W * x);
b ~ normal(0, 2);
W ~ normal(0, 1);
M
"$vbn" simulate "$wide" --rows "$rows" --seed 1 --output "$tmp/wide.csv" 2>/dev/null
echo "== $rows rows x 50 binary columns ($(du -h "$tmp/wide.csv" | cut -f1) of CSV)"
measure "load (check --data)" "$vbn" check "$wide" --data "$tmp/wide.csv"
measure "vb" "$vbn" vb "$wide" --data "$tmp/wide.csv"
measure "fit 1000 draws, 1 chain" "$vbn" fit "$wide" --data "$tmp/wide.csv" --chains 1 --warmup 200 --draws 1000 \
  --seed 1 --quiet --output "$tmp/wide_fit.csv"

many=$tmp/many.vbn
cat >"$many" <<M
node a ~ bernoulli(0.5);
node v[$((nodes - 1))] ~ logistic(b + w * a);
b ~ normal(0, 1);
w ~ normal(0, 1);
M
"$vbn" simulate "$many" --rows 1000 --seed 2 --output "$tmp/many.csv" 2>/dev/null
echo "== $nodes nodes, 1000 rows, $((2 * (nodes - 1))) parameters"
measure "load (check --data)" "$vbn" check "$many" --data "$tmp/many.csv"
measure "vb" "$vbn" vb "$many" --data "$tmp/many.csv"
measure "fit 1000 draws, 1 chain" "$vbn" fit "$many" --data "$tmp/many.csv" --chains 1 --warmup 200 --draws 1000 \
  --seed 1 --quiet --output "$tmp/many_fit.csv"
