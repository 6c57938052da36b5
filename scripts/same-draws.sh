#!/usr/bin/env bash
# Whether two vbn binaries give the same draws: runs `vbn fit` with every method on every
# bundled example at one seed (and `vbn vb`, `predict --vb`, `compare`, `simulate`) with each
# binary and compares the outputs, timing lines and timing columns left out. For refactors
# that must not change behaviour.
#   scripts/same-draws.sh OLD_VBN NEW_VBN [SEED] [DRAWS]
set -uo pipefail
old=$(realpath "$1") new=$(realpath "$2") seed=${3:-3} draws=${4:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
methods=(auto rwm varmh varblock varmix regen nuts gibbs)
same=0 differ=0 both_failed=0
# CmdStan CSV less its timing comments and the vbn version; a summary less its times.
strip() {
  case $1 in
  *.json) python3 -c 'import json, sys
def clean(v):
    if isinstance(v, dict): return {k: clean(x) for k, x in v.items() if "second" not in k and k not in ("timings", "chain_seconds")}
    if isinstance(v, list): return [clean(x) for x in v]
    return v
print(json.dumps(clean(json.load(open(sys.argv[1]))), indent=1))' "$1" 2>/dev/null ;;
  *) grep -v -E '^# *(Elapsed|[0-9.]+ seconds|vbn_version)|seconds \(|time|[0-9.]+ s\b|[0-9.]+ ms\b' "$1" 2>/dev/null ;;
  esac
}
compare() {  # NAME COMMAND... (run with vbn replaced by each binary; outputs under $tmp/{old,new})
  local name=$1; shift
  for side in old new; do
    local bin=$old; [ $side = new ] && bin=$new
    mkdir -p "$tmp/$side"; rm -f "$tmp/$side"/*
    (cd "$tmp/$side" && "$bin" "$@" >stdout 2>stderr; echo $? >status)
  done
  local ok=1
  for f in "$tmp/old"/*; do
    b=$(basename "$f")
    [ "$b" = stderr ] && continue
    if ! diff -q <(strip "$f") <(strip "$tmp/new/$b") >/dev/null; then ok=0; echo "DIFFERS $name: $b"; diff <(strip "$f") <(strip "$tmp/new/$b") | head -5; fi
  done
  if [ $ok = 1 ]; then same=$((same + 1)); else differ=$((differ + 1)); fi
}
for m in "$root"/examples/paper/*.vbn "$root"/examples/wells/wells.vbn "$root"/examples/wide/wide.vbn; do
  csv=${m%.vbn}.csv
  n=$(basename "$m" .vbn)
  for method in "${methods[@]}"; do
    compare "fit $n $method" fit "$m" --data "$csv" --method "$method" --seed "$seed" --draws "$draws" --warmup "$draws" \
      --chains 2 --quiet --output out.csv --summary-json summary.json
  done
  compare "vb $n" vb "$m" --data "$csv" --seed "$seed" --restarts 3 --summary-json vb.json
  compare "predict $n" predict "$m" --data "$csv" --vb --train "$csv" --seed "$seed" --output p.csv
  compare "simulate $n" simulate "$m" --rows 20 --seed "$seed" --include-hidden
done
compare "compare" compare "$root/examples/paper/multimodal.vbn" "$root/examples/paper/bimodal.vbn" --data "$root/examples/paper/multimodal.csv" --seed "$seed"
echo "same: $same, differ: $differ"
[ "$differ" = 0 ]
