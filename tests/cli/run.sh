#!/usr/bin/env bash
# End-to-end tests of the vbn binary: exit statuses, messages and outputs.
#   tests/cli/run.sh path/to/vbn path/to/repository
set -uo pipefail
vbn=$1
root=$2
ex=$root/examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# run NAME EXPECTED_STATUS -- command...   (stdout in $tmp/out, stderr in $tmp/err)
run() {
  local name=$1 want=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit status $got, expected $want"; sed 's/^/  stderr: /' "$tmp/err" | head -20
    failed=$((failed + 1)); return 1
  fi
  return 0
}
# expect NAME FILE PATTERN: FILE (out or err) contains the extended regex PATTERN
expect() {
  if grep -Eq -- "$3" "$tmp/$2"; then passed=$((passed + 1)); else
    echo "FAIL $1: $2 does not match /$3/"; sed "s/^/  $2: /" "$tmp/$2" | head -20; failed=$((failed + 1)); fi
}
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# --- check -------------------------------------------------------------------------------
for m in "$ex"/paper/*.vbn "$ex"/wells/wells.vbn; do
  n=$(basename "$m")
  run "check $n" 0 -- "$vbn" check "$m" && expect "check $n" out "^model .*binary node" && expect "check $n lists blocks" out "^blocks"
done
run "check multimodal" 0 -- "$vbn" check "$ex/paper/multimodal.vbn" &&
  expect "multimodal predictor" out "y +observed +~ logistic\(2 \+ w\[1\]\*h \+ w\[2\]\*o\)" &&
  expect "multimodal hidden" out "h +hidden +~ bernoulli\(0\.6\)" &&
  expect "multimodal parameter" out "w +vector\[2\]"
run "check sbn" 0 -- "$vbn" check "$ex/paper/sbn_3x8.vbn" && expect "sbn matrix" out "W +matrix\[8,3\]" && expect "sbn blocks" out "32 parameters in 8 blocks"

for csv in "$ex"/paper/*.csv "$ex"/wells/wells.csv; do
  m=${csv%.csv}.vbn
  [ -f "$m" ] || continue
  n=$(basename "$csv")
  run "check --data $n" 0 -- "$vbn" check "$m" --data "$csv" && expect "check --data $n" out "distinct pattern"
done
run "check --data counts" 0 -- "$vbn" check "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" &&
  expect "rows" out "^data .*: 50 rows, [0-9]+ distinct patterns"
# a column for a hidden node is an error
run "hidden column" 1 -- "$vbn" check "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal_with_hidden.csv" && expect "hidden column" err "hidden"

run "check --dot" 0 -- "$vbn" check "$ex/paper/sbn_3x8.vbn" --dot "$tmp/g.dot" &&
  if grep -q '"h\[1\]" -> "v\[1\]"' "$tmp/g.dot" && grep -q '^digraph' "$tmp/g.dot"; then ok; else bad "dot content"; fi
if command -v dot >/dev/null; then
  if dot -Tsvg "$tmp/g.dot" -o "$tmp/g.svg" 2>/dev/null; then ok; else bad "graphviz rejects our DOT"; fi
fi

run "missing model file" 1 -- "$vbn" check "$tmp/nope.vbn" && expect "missing model" err "cannot read model file .*nope\.vbn"
printf 'node y ~ logistic(b + w * q);\nb ~ normal(0, 1);\nw ~ normal(0, 1);\n' >"$tmp/bad.vbn"
run "bad model" 1 -- "$vbn" check "$tmp/bad.vbn" && expect "bad model location" err "bad\.vbn:1:[0-9]+: error:" && expect "caret" err "\^"
head -c 3000 /dev/urandom >"$tmp/garbage.vbn"
run "garbage model" 1 -- "$vbn" check "$tmp/garbage.vbn" && expect "garbage model" err "garbage\.vbn:[0-9]+:[0-9]+: error"
: >"$tmp/empty.vbn"
run "empty model" 1 -- "$vbn" check "$tmp/empty.vbn" && expect "empty model" err "empty\.vbn"
printf 'o,y\n1,1\n-1,maybe\n' >"$tmp/bad.csv"
run "bad data value" 1 -- "$vbn" check "$ex/paper/multimodal.vbn" --data "$tmp/bad.csv" && expect "bad value place" err "bad\.csv:3:[0-9]+.*maybe"
printf 'o\n1\n' >"$tmp/nocol.csv"
run "missing column" 1 -- "$vbn" check "$ex/paper/multimodal.vbn" --data "$tmp/nocol.csv" && expect "missing column" err "'y'|\by\b"
run "unknown command" 1 -- "$vbn" frobnicate
run "no command" 1 -- "$vbn"
run "help" 0 -- "$vbn" --help && expect "help" out "simulate"

# --- simulate ----------------------------------------------------------------------------
m=$ex/paper/multimodal.vbn
run "simulate" 0 -- "$vbn" simulate "$m" --rows 20 --seed 7 && cp "$tmp/out" "$tmp/a.csv" && expect "simulate header" out "^o,y$"
if [ "$(wc -l <"$tmp/a.csv")" -eq 21 ]; then ok; else bad "simulate row count"; fi
run "simulate again" 0 -- "$vbn" simulate "$m" --rows 20 --seed 7 && if cmp -s "$tmp/out" "$tmp/a.csv"; then ok; else bad "same seed, same rows"; fi
run "simulate other seed" 0 -- "$vbn" simulate "$m" --rows 20 --seed 8 && if cmp -s "$tmp/out" "$tmp/a.csv"; then bad "other seed, other rows"; else ok; fi
run "simulate hidden" 0 -- "$vbn" simulate "$m" --rows 3 --seed 7 --include-hidden && expect "hidden column" out "^h,o,y$"
echo '{"w": [2, -1]}' >"$tmp/p.json"
run "simulate params" 0 -- "$vbn" simulate "$m" --rows 5 --seed 1 --params "$tmp/p.json" --output "$tmp/s.csv" &&
  expect "params echoed" err '"w":\[2(\.0)?,-1(\.0)?\]'
run "simulated data checks" 0 -- "$vbn" check "$m" --data "$tmp/s.csv"
echo '{"v": [1]}' >"$tmp/q.json"
run "unknown parameter" 1 -- "$vbn" simulate "$m" --rows 5 --params "$tmp/q.json" && expect "unknown parameter" err "'v' is not in the model"
echo '{"w": [1, 2, 3]}' >"$tmp/q.json"
run "wrong shape" 1 -- "$vbn" simulate "$m" --rows 5 --params "$tmp/q.json" && expect "wrong shape" err "expected a vector of 2"
echo '{"w": [1, ' >"$tmp/q.json"
run "bad json" 1 -- "$vbn" simulate "$m" --rows 5 --params "$tmp/q.json" && expect "bad json" err "not valid JSON"
run "zero rows" 1 -- "$vbn" simulate "$m" --rows 0
run "no seed" 0 -- "$vbn" simulate "$m" --rows 2 && expect "seed printed" err "pass --seed [0-9]+"
# bundled data is exactly what its recorded command makes
run "paper data reproducible" 0 -- "$vbn" simulate "$m" --rows 50 --seed 52 --params "$ex/paper/multimodal.params.json" &&
  if cmp -s "$tmp/out" "$ex/paper/multimodal.csv"; then ok; else bad "examples/paper/multimodal.csv differs from its simulate command"; fi
run "simulate wells covariates" 0 -- "$vbn" simulate "$ex/wells/wells.vbn" --rows 4 --seed 3 && expect "covariate columns" out "^dist100,arsenic,switched$"

# --- vb ----------------------------------------------------------------------------------
run "vb" 0 -- "$vbn" vb "$ex/paper/unimodal_d5.vbn" --data "$ex/paper/unimodal_d5.csv" --summary-json "$tmp/vb.json" &&
  expect "vb table" out "^name +mean +sd" && expect "vb rows" out "^w\[5\] " && expect "vb elbo" out "ELBO -[0-9.]+ .*converged"
if grep -q '"method"' "$tmp/vb.json" && grep -q '"name": *"w\[1\]"' "$tmp/vb.json"; then ok; else bad "vb summary json"; fi
run "vb restarts" 0 -- "$vbn" vb "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --restarts 3 && expect "restarts listed" out "restarts \(ELBO\)"
run "vb without data" 1 -- "$vbn" vb "$ex/paper/multimodal.vbn"

# --- fit and summary ---------------------------------------------------------------------
m=$ex/paper/unimodal_d1.vbn
d=$ex/paper/unimodal_d1.csv
for method in rwm varmh varblock varmix regen nuts; do
  run "fit $method" 0 -- "$vbn" fit "$m" --data "$d" --method "$method" --seed 3 --warmup 200 --draws 200 --quiet &&
    expect "fit $method table" out "^name +mean +sd +mcse +5% +50% +95% +ess_bulk +ess_tail +rhat" && expect "fit $method row" out "^w "
done
run "fit csv" 0 -- "$vbn" fit "$m" --data "$d" --seed 3 --warmup 100 --draws 150 --chains 2 --output "$tmp/fit.csv" --summary-json "$tmp/fit.json" --quiet &&
  cp "$tmp/out" "$tmp/fit_table.txt"
if [ -f "$tmp/fit_1.csv" ] && [ -f "$tmp/fit_2.csv" ] && [ ! -f "$tmp/fit_3.csv" ]; then ok; else bad "one CSV file per chain"; fi
if grep -q '^lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,w$' "$tmp/fit_1.csv"; then ok; else bad "CmdStan CSV header"; fi
if [ "$(grep -vc '^#' "$tmp/fit_1.csv")" -eq 151 ]; then ok; else bad "CSV holds header + 150 draws"; fi
if grep -q '"draws": *150' "$tmp/fit.json" && grep -q '"chains": *2' "$tmp/fit.json"; then ok; else bad "fit summary json"; fi
run "summary of our CSV" 0 -- "$vbn" summary "$tmp/fit_1.csv" "$tmp/fit_2.csv" &&
  if [ "$(grep '^w ' "$tmp/out")" = "$(grep '^w ' "$tmp/fit_table.txt")" ]; then ok; else bad "vbn summary reproduces the fit's row"; fi
run "same seed same draws, threads 1 vs 2" 0 -- "$vbn" fit "$m" --data "$d" --seed 9 --warmup 50 --draws 50 --threads 1 --output "$tmp/t1.csv" --quiet
run "threads 2" 0 -- "$vbn" fit "$m" --data "$d" --seed 9 --warmup 50 --draws 50 --threads 2 --output "$tmp/t2.csv" --quiet
for c in 1 2 3 4; do
  if diff <(grep -v '^#' "$tmp/t1_$c.csv") <(grep -v '^#' "$tmp/t2_$c.csv") >/dev/null; then ok; else bad "chain $c differs between --threads 1 and 2"; fi
done
run "unknown method" 1 -- "$vbn" fit "$m" --data "$d" --method magic && expect "unknown method" err "unknown method 'magic'"
run "zero draws" 1 -- "$vbn" fit "$m" --data "$d" --draws 0
run "summary of missing file" 1 -- "$vbn" summary "$tmp/none_1.csv"

# --- limits and interruption ---------------------------------------------------------------
m=$ex/paper/unimodal_d1.vbn
d=$ex/paper/unimodal_d1.csv
run "draws beyond memory" 1 -- "$vbn" fit "$m" --data "$d" --chains 4 --draws 2000000000 --seed 1 --quiet &&
  expect "draws beyond memory" err "error: keeping 4 chains × 2000000000 draws .* more than the .* GB of memory available; ask for fewer draws \(--draws [0-9]+ would fit\)"
# SIGINT during fit: the chains finish their iteration, the CSV files get their timing
# footer, the summary of what was drawn is printed with a warning, and the status is 130.
"$vbn" fit "$m" --data "$d" --chains 2 --warmup 20 --draws 1000000 --seed 3 --output "$tmp/int.csv" \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do  # wait until both chains have written draws (at most 10 s)
  [ "$(grep -cv '^#' "$tmp/int_2.csv" 2>/dev/null)" -gt 10 ] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
st=$?
if [ "$st" -eq 130 ]; then ok; else bad "SIGINT during fit: exit status $st, expected 130"; sed 's/^/  stderr: /' "$tmp/err" | head; fi
expect "SIGINT warning" err "warning: interrupted; the summary holds only the [0-9]+ draws per chain"
expect "SIGINT summary" out "^w "
for c in 1 2; do
  f=$tmp/int_$c.csv
  rows=$(grep -v '^#' "$f" | tail -n +2 | wc -l)
  cols=$(grep -v '^#' "$f" | awk -F, '{print NF}' | sort -u | wc -l)
  if [ "$rows" -gt 0 ] && [ "$cols" -eq 1 ] && grep -q 'Elapsed Time: .* seconds (Warm-up)' "$f" &&
     grep -q 'seconds (Total)' "$f"; then ok; else bad "SIGINT CSV $c: $rows draws, $cols distinct column counts, footer?"; fi
done
# Chains stop at different points, so each file is read back on its own.
run "summary of an interrupted CSV" 0 -- "$vbn" summary "$tmp/int_1.csv" && expect "summary of interrupted" out "^w "

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
