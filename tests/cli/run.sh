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
elif [ "${CI:-}" = true ]; then
  bad "graphviz (dot) is not installed, but CI must check our DOT with it (scripts/install-deps.sh installs it)"
else
  echo "SKIPPED: graphviz not found, so dot did not read vbn check --dot's graph"
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
# Data as pandas, R and spreadsheets write it (docs/language.md, "Data").
mm=$ex/paper/multimodal.vbn
printf ',o,y\n0,1.0,0.0\n1,0.0,\n2,T,F\n3,1.0,N/A\n4,true,NULL\n5,F,None\n' >"$tmp/pandas.csv"
run "pandas spellings" 0 -- "$vbn" check "$mm" --data "$tmp/pandas.csv" && expect "pandas spellings" out "^data .*: 6 rows, [0-9]+ distinct patterns"
printf 'o;y\n1;1\n"-1";0\n' >"$tmp/semi.csv"
run "semicolons" 0 -- "$vbn" check "$mm" --data "$tmp/semi.csv" && expect "semicolons read" out "^data .*: 2 rows" &&
  expect "semicolons noted" err "^note: .*semi\.csv: reading the file as semicolon-separated"
printf 'o,y\n1,0\n1,1\n-1,-1\n' >"$tmp/mixed.csv"
run "mixed codings" 1 -- "$vbn" check "$mm" --data "$tmp/mixed.csv" &&
  expect "mixed codings" err "^error: .*mixed\.csv:4:2: column 'y' mixes the 1/0 and 1/-1 codings: its 0s \(the first at .*mixed\.csv:2:2\) and its -1s \(the first at .*mixed\.csv:4:2\)"
printf 'node smoker ~ bernoulli(0.3);\nnode cancer ~ logistic(b + w * smoker);\nb, w ~ normal(0, 1);\n' >"$tmp/smoke.vbn"
printf 'smokr,cancer\n1,1\n' >"$tmp/typo.csv"
run "header typo" 1 -- "$vbn" check "$tmp/smoke.vbn" --data "$tmp/typo.csv" &&
  expect "header typo" err "missing column for smoker.*column 'smokr' is not in the model; did you mean 'smoker'\?"
# 25 bad cells: the first 20 listed with place, column name and a hint, then how many more;
# one error, exit status 1.
{ printf 'o,y\n'; for i in $(seq 25); do printf '1,maybe%s\n' "$i"; done; } >"$tmp/many_bad.csv"
run "many bad cells" 1 -- "$vbn" check "$mm" --data "$tmp/many_bad.csv" &&
  expect "first bad cell" err "^error: .*many_bad\.csv:2:2: column 'y': 'maybe1' is not a binary value; expected 1/-1 or 1/0" &&
  expect "20th bad cell" err "^.*many_bad\.csv:21:2: column 'y': 'maybe20' is not a binary value; expected a binary or missing value as listed above$" &&
  expect "the rest counted" err "^\.\.\. and 5 more errors$" &&
  if [ "$(grep -c "many_bad\.csv:[0-9]*:2: column 'y'" "$tmp/err")" -eq 20 ] && [ "$(grep -c '^error:' "$tmp/err")" -eq 1 ]; then ok; else
    bad "many bad cells: 20 cells listed under one error"; fi
run "unknown command" 1 -- "$vbn" frobnicate && expect "unknown command" err "subcommand|frobnicate"
run "no command" 1 -- "$vbn" && expect "no command" err "subcommand is required"
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
run "zero rows" 1 -- "$vbn" simulate "$m" --rows 0 && expect "zero rows" err "^error: --rows must be at least 1$"
run "no seed" 0 -- "$vbn" simulate "$m" --rows 2 && expect "seed printed" err "pass --seed [0-9]+"
# bundled data is exactly what its recorded command makes
run "paper data reproducible" 0 -- "$vbn" simulate "$m" --rows 50 --seed 52 --params "$ex/paper/multimodal.params.json" &&
  if cmp -s "$tmp/out" "$ex/paper/multimodal.csv"; then ok; else bad "examples/paper/multimodal.csv differs from its simulate command"; fi
run "simulate wells covariates" 0 -- "$vbn" simulate "$ex/wells/wells.vbn" --rows 4 --seed 3 && expect "covariate columns" out "^dist100,arsenic,switched$"

# --- vb ----------------------------------------------------------------------------------
run "vb" 0 -- "$vbn" vb "$ex/paper/unimodal_d5.vbn" --data "$ex/paper/unimodal_d5.csv" --summary-json "$tmp/vb.json" --seed 1 &&
  expect "vb table" out "^name +mean +sd" && expect "vb rows" out "^w\[5\] " && expect "vb elbo" out "ELBO -[0-9.]+ .*converged"
if grep -q '"method"' "$tmp/vb.json" && grep -q '"name": *"w\[1\]"' "$tmp/vb.json"; then ok; else bad "vb summary json"; fi
run "vb restarts" 0 -- "$vbn" vb "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --restarts 3 --seed 1 && expect "restarts listed" out "restarts \(ELBO\)"
run "vb without data" 1 -- "$vbn" vb "$ex/paper/multimodal.vbn" && expect "vb without data" err "--data is required"
run "vb corrected" 0 -- "$vbn" vb "$ex/paper/unimodal_d5.vbn" --data "$ex/paper/unimodal_d5.csv" --summary-json "$tmp/vbc.json" --seed 1 &&
  expect "corrected table" out "^name +mean +sd +mcse +5% +50% +95% +vb_mean +vb_sd" && expect "k-hat reported" out "k-hat -?[0-9.]+ \(reliable"
if grep -q '"pareto_k"' "$tmp/vbc.json" && grep -q '"vb_sd"' "$tmp/vbc.json" && grep -q '"correction": *"importance"' "$tmp/vbc.json"; then ok; else bad "vb corrected summary json"; fi
run "vb raw fit" 0 -- "$vbn" vb "$ex/paper/unimodal_d5.vbn" --data "$ex/paper/unimodal_d5.csv" --correction none --summary-json "$tmp/vbr.json" &&
  expect "raw table" out "^name +mean +sd +5% +50% +95%$"
# docs/design.md §4: "mean"/"sd" are the variational fit's with or without the correction; the corrected moments have their own keys.
if diff <(grep -E '"(mean|sd|q5|q50|q95)":' "$tmp/vbc.json" | tr -d ,) <(grep -E '"(mean|sd|q5|q50|q95)":' "$tmp/vbr.json" | tr -d ,) >/dev/null &&
  [ "$(grep -c '"corrected_mean":' "$tmp/vbc.json")" -eq 5 ] && [ "$(grep -c '"corrected_mcse_mean":' "$tmp/vbc.json")" -eq 5 ] &&
  ! grep -q '"corrected_' "$tmp/vbr.json"; then ok; else bad "vb json: mean/sd are the raw fit, corrected_* the corrected moments"; fi
printf 'node a ~ bernoulli(0.3);\nnode b ~ logistic(0.5 + 1 * a);\n' > "$tmp/fixed.vbn"; printf 'a,b\n1,1\n-1,1\n' > "$tmp/fixed.csv"
run "vb without parameters" 0 -- "$vbn" vb "$tmp/fixed.vbn" --data "$tmp/fixed.csv" --seed 1 && expect "no parameters: raw table" out "^name +mean +sd +5%"
run "vb bad correction" 1 -- "$vbn" vb "$ex/paper/unimodal_d5.vbn" --data "$ex/paper/unimodal_d5.csv" --correction maybe &&
  expect "vb bad correction" err "--correction: maybe not in \{auto,importance,tempering,none\}"

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
# The phases' wall times: the seven, in the order they ran, none negative, and together no
# more than the whole process took; with symmetry jumps (the multimodal example's hidden h)
# the modes' masses too, after the summary.
timings_ok() {  # timings_ok JSON "NAMES " ELAPSED_NS
  awk -v elapsed="$3" -v want="$2" '
    /"timings": \{/ { inside = 1; next }
    inside && /^ *\}/ { inside = 0 }
    inside { gsub(/[",:]/, " "); names = names $1 " "; if ($2 + 0 < 0 || $2 !~ /^[0-9.e+-]+$/) bad = 1; sum += $2 }
    END { exit !(names == want && !bad && sum * 1e9 <= elapsed) }
  ' "$1"
}
phases="load target variational proposal warmup sampling summary "
started=$(date +%s%N)
run "fit timings" 0 -- "$vbn" fit "$m" --data "$d" --seed 3 --warmup 100 --draws 150 --summary-json "$tmp/timed.json" --quiet
if timings_ok "$tmp/timed.json" "$phases" $(($(date +%s%N) - started)); then ok; else bad "fit summary json timings"; fi
started=$(date +%s%N)
run "fit timings with modes" 0 -- "$vbn" fit "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" \
  --seed 3 --warmup 100 --draws 150 --summary-json "$tmp/timed_modes.json" --quiet
if timings_ok "$tmp/timed_modes.json" "${phases}modes " $(($(date +%s%N) - started)); then ok; else bad "fit summary json timings with modes"; fi
# With --output, finishing the files and relabelling their draws is a phase of its own.
started=$(date +%s%N)
run "fit timings with files" 0 -- "$vbn" fit "$m" --data "$d" --seed 3 --warmup 100 --draws 150 \
  --output "$tmp/timed.csv" --summary-json "$tmp/timed_files.json" --quiet
if timings_ok "$tmp/timed_files.json" "load target variational proposal warmup sampling files summary " \
  $(($(date +%s%N) - started)); then ok; else bad "fit summary json timings with files"; fi
run "summary of our CSV" 0 -- "$vbn" summary "$tmp/fit_1.csv" "$tmp/fit_2.csv" &&
  if [ "$(grep '^w ' "$tmp/out")" = "$(grep '^w ' "$tmp/fit_table.txt")" ]; then ok; else bad "vbn summary reproduces the fit's row"; fi
# With --output the draws are streamed to the files, not kept, and the summary is read back
# from them: the same seed gives the same table (all but the elapsed times) as without.
for method in rwm varmh varblock varmix regen nuts; do
  run "fit $method kept" 0 -- "$vbn" fit "$m" --data "$d" --method $method --seed 5 --warmup 100 --draws 300 --chains 2 --quiet &&
    grep -v '^Elapsed time' "$tmp/out" >"$tmp/kept.txt"
  run "fit $method streamed" 0 -- "$vbn" fit "$m" --data "$d" --method $method --seed 5 --warmup 100 --draws 300 --chains 2 --quiet --output "$tmp/str.csv" &&
    if grep -q '^w ' "$tmp/kept.txt" && diff "$tmp/kept.txt" <(grep -v '^Elapsed time' "$tmp/out") >/dev/null; then ok; else
      bad "fit $method: the summary with --output differs from the one without"; diff "$tmp/kept.txt" "$tmp/out" | head; fi
done
run "same seed same draws, threads 1 vs 2" 0 -- "$vbn" fit "$m" --data "$d" --seed 9 --warmup 50 --draws 50 --threads 1 --output "$tmp/t1.csv" --quiet
run "threads 2" 0 -- "$vbn" fit "$m" --data "$d" --seed 9 --warmup 50 --draws 50 --threads 2 --output "$tmp/t2.csv" --quiet
for c in 1 2 3 4; do
  if diff <(grep -v '^#' "$tmp/t1_$c.csv") <(grep -v '^#' "$tmp/t2_$c.csv") >/dev/null; then ok; else bad "chain $c differs between --threads 1 and 2"; fi
done
run "unknown method" 1 -- "$vbn" fit "$m" --data "$d" --method magic && expect "unknown method" err "unknown method 'magic'"
run "zero draws" 1 -- "$vbn" fit "$m" --data "$d" --draws 0 && expect "zero draws" err "^error: --draws must be at least 1$"
# The independence kernels' proposal: the checked Laplace fit at the exact mode by default, the
# variational fit with --proposal vb.
run "fit laplace proposal" 0 -- "$vbn" fit "$m" --data "$d" --method varmh --seed 3 --warmup 100 --draws 100 &&
  expect "laplace proposal note" err "independence proposal: t\(30\) per block at the exact posterior mode" && expect "laplace row" out "^w "
run "fit --proposal vb" 0 -- "$vbn" fit "$m" --data "$d" --method varmh --proposal vb --seed 3 --warmup 100 --draws 100 &&
  if grep -q "independence proposal" "$tmp/err"; then bad "--proposal vb still notes the Laplace proposal"; else ok; fi
run "unknown proposal" 1 -- "$vbn" fit "$m" --data "$d" --proposal magic && expect "unknown proposal" err "proposal"
# varblock's whole blocks: that t with 100 degrees of freedom, centred by the skewness
# correction (so not re-centred in warmup), and the notes say so.
run "varblock whole blocks" 0 -- "$vbn" fit "$m" --data "$d" --method varblock --seed 3 --warmup 100 --draws 100 &&
  expect "skewness-corrected centre note" err "at the exact posterior mode \(Newton, [0-9]+ iterations\) plus its skewness correction towards the mean, with the Laplace covariance" &&
  expect "varblock whole-block note" err "varblock: whole blocks \(1 of 1\) propose from that t with 100 degrees of freedom; after warmup" &&
  if grep -q "re-centred in warmup" "$tmp/err"; then bad "a skewness-corrected block is still re-centred in warmup"; else ok; fi
# varblock moves a node with more than 20 weights in whitened sub-blocks, and says so, where
# its proposal has no triangular map (here the variational one).
run "varblock sub-blocks" 0 -- "$vbn" fit "$ex/paper/unimodal_d50.vbn" --data "$ex/paper/unimodal_d50.csv" --method varblock --proposal vb --seed 3 --chains 2 --warmup 100 --draws 100 &&
  expect "varblock sub-block note" err "note: varblock: nodes with more than 20 weights move in sub-blocks of at most 10 whitened coordinates .*: y \(50 weights in 5 sub-blocks\)" &&
  expect "varblock sub-block row" out "^w\[50\] "
# With the exact posterior's proposal, 50 weights are skewed by the triangular map and moved
# whole; auto chooses varblock for them.
run "varblock mapped block" 0 -- "$vbn" fit "$ex/paper/unimodal_d50.vbn" --data "$ex/paper/unimodal_d50.csv" --seed 3 --chains 2 --warmup 100 --draws 100 &&
  expect "auto chose varblock at 50 weights" err "note: method auto chose varblock" &&
  expect "skewed proposal note" err "at the exact posterior mode \(Newton, [0-9]+ iterations\) skewed by the triangular map of its third derivatives, with the Laplace covariance" &&
  expect "mapped block moved whole" err "varblock: whole blocks \(1 of 1\) propose from that t with 100 degrees of freedom" &&
  if grep -q "sub-blocks" "$tmp/err"; then bad "a mapped block is still split"; else ok; fi

# vb and fit list the parameters in one order (CmdStan's: a matrix column by column).
run "vb order" 0 -- "$vbn" vb "$ex/paper/sbn_3x8.vbn" --data "$ex/paper/sbn_3x8.csv" --correction none &&
  awk 'NR > 1 && NF == 6 { print $1 }' "$tmp/out" >"$tmp/vb_names" &&
  run "fit order" 0 -- "$vbn" fit "$ex/paper/sbn_3x8.vbn" --data "$ex/paper/sbn_3x8.csv" --method rwm --quiet --seed 1 --chains 1 --warmup 10 --draws 10 &&
  awk '$1 ~ /^[A-Za-z]+\[/ && NF == 10 { print $1 }' "$tmp/out" >"$tmp/fit_names" &&
  if [ -s "$tmp/vb_names" ] && cmp -s "$tmp/vb_names" "$tmp/fit_names"; then ok; else
    bad "vb and fit list the parameters in different orders: $(paste -sd' ' "$tmp/vb_names" | cut -c1-80) / $(paste -sd' ' "$tmp/fit_names" | cut -c1-80)"; fi

# fit --restarts: the chains start from the best of K variational fits. On sbn_3x8 the first
# start stops far below the best (ELBO -1180 against -964 with 8 starts at seed 1), and 8 is
# the default for a model with hidden nodes.
sbn=$ex/paper/sbn_3x8
elbo_of() { sed -nE 's/^ELBO: (-?[0-9.]+)$/\1/p' "$tmp/out"; }
run "fit one start" 0 -- "$vbn" fit "$sbn.vbn" --data "$sbn.csv" --seed 1 --warmup 20 --draws 20 --quiet --restarts 1 &&
  e1=$(elbo_of)
run "fit, default starts" 0 -- "$vbn" fit "$sbn.vbn" --data "$sbn.csv" --seed 1 --warmup 20 --draws 20 --quiet && e8=$(elbo_of)
if [ -n "${e1:-}" ] && [ -n "${e8:-}" ] && awk -v a="$e1" -v b="$e8" 'BEGIN { exit !(b > a + 10) }'; then ok; else
  bad "fit's default starts should give a better variational fit than one start (ELBO '${e1:-}' vs '${e8:-}')"; fi

# auto's pilot check can replace varmix by nuts after the variational fit: the CSV files must
# then be NUTS's (algorithm hmc, its adaptation block), not varmix's, and every chain write.
run "fit --output after auto's switch to nuts" 0 -- "$vbn" fit "$sbn.vbn" --data "$sbn.csv" --seed 1 --warmup 30 --draws 30 \
  --chains 2 --output "$tmp/switch.csv" --quiet &&
  expect "switched run's summary" out "^Inference for .*: method nuts, 2 chains x 30 draws" &&
  if grep -q '^# *algorithm = hmc' "$tmp/switch_1.csv" && grep -q '^# *Step size' "$tmp/switch_2.csv" &&
     [ "$(grep -cv '^#' "$tmp/switch_2.csv")" -eq 31 ]; then ok; else bad "fit --output after auto's switch: files not NUTS's"; fi

# --- gibbs: hidden values sampled, no limit on them per row --------------------------------
run "fit gibbs" 0 -- "$vbn" fit "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --method gibbs --seed 3 --warmup 200 --draws 200 --quiet &&
  expect "fit gibbs row" out "^w\[1\] " && expect "fit gibbs acceptance" out "gibbs sweep over unobserved values .*conditional laplace block mh"
run "over the limit, exact method" 1 -- "$vbn" fit "$ex/wide/wide.vbn" --data "$ex/wide/wide.csv" --method varmix --quiet &&
  expect "limit error points to gibbs" err "2\^14 terms per row.*--method gibbs"
run "over the limit, auto" 0 -- "$vbn" fit "$ex/wide/wide.vbn" --data "$ex/wide/wide.csv" --seed 3 --warmup 100 --draws 100 &&
  expect "auto falls back to gibbs" err "auto chose gibbs" && expect "auto gibbs row" out "^b\[2\] "
run "summary of missing file" 1 -- "$vbn" summary "$tmp/none_1.csv" && expect "summary of missing file" err "^error: no such file '.*none_1\.csv'$"

# --- evidence, predict, compare ----------------------------------------------------------
mm=$ex/paper/multimodal.vbn
mmd=$ex/paper/multimodal.csv
run "vb evidence" 0 -- "$vbn" vb "$ex/paper/unimodal_d1.vbn" --data "$ex/paper/unimodal_d1.csv" --summary-json "$tmp/vbe.json" --seed 1 &&
  expect "log evidence printed" out "^log p\(data\) ~ -[0-9.]+ \+- [0-9.]+ \(importance sampling\)" &&
  expect "k-hat good" out "k-hat -?[0-9.]+ \(reliable below 0\.7\)"
if grep -q '"log_evidence": *-[0-9]' "$tmp/vbe.json" && grep -q '"log_evidence_se": *[0-9]' "$tmp/vbe.json" &&
  grep -q '"pareto_k": *-\?[0-9]' "$tmp/vbe.json"; then ok; else bad "vb summary json has the evidence keys"; fi
run "vb evidence multimodal, importance alone" 0 -- "$vbn" vb "$mm" --data "$mmd" --seed 1 --correction importance &&
  expect "k-hat unreliable" out "k-hat [0-9.]+ \(ABOVE 0\.7: the corrected numbers are NOT reliable\)" &&
  expect "k-hat warning" err "^warning: importance-correction k-hat"
run "vb evidence multimodal, tempered" 0 -- "$vbn" vb "$mm" --data "$mmd" --seed 1 --summary-json "$tmp/vbt.json" &&
  expect "tempering said" err "^note: the importance correction's k-hat is [0-9.]+ \(above 0\.7\): correcting by tempering" &&
  expect "tempered line" out "^corrected posterior by tempering: .* the runs agree \(R-hat 1\.0[0-9]+\)$" &&
  expect "tempered evidence" out "^log p\(data\) ~ -[0-9.]+ \+- [0-9.]+ \(tempering\)"
if grep -q '"correction": *"tempering"' "$tmp/vbt.json" && grep -q '"correction_rhat": *[01]\.' "$tmp/vbt.json"; then ok; else bad "vb summary json names the tempering"; fi
if grep -q '^warning' "$tmp/err"; then bad "a tempered correction whose runs agree draws no warning"; else ok; fi
run "vb no evidence" 0 -- "$vbn" vb "$mm" --data "$mmd" --correction none --summary-json "$tmp/vb0.json"
if grep -q '^log p(data) ~' "$tmp/out" || grep -q '"pareto_k"' "$tmp/vb0.json"; then bad "--correction none skips the estimate"; else ok; fi

run "fit for predict" 0 -- "$vbn" fit "$mm" --data "$mmd" --seed 4 --warmup 200 --draws 200 --chains 2 --output "$tmp/mm.csv" --quiet
printf 'o,y\n1,\n-1,1\n,\n' >"$tmp/new.csv"
run "predict draws" 0 -- "$vbn" predict "$mm" --data "$tmp/new.csv" --draws "$tmp/mm_1.csv" "$tmp/mm_2.csv" --output "$tmp/pred.csv" &&
  expect "predict table" out "^ +row +node +p$" && expect "predict draws count" out "averaged over 400 draws"
if [ "$(head -1 "$tmp/pred.csv")" = "row,node,p" ] &&
  [ "$(tail -n +2 "$tmp/pred.csv" | cut -d, -f1,2 | tr '\n' ' ')" = "1,h 1,y 2,h 3,h 3,o 3,y " ] &&
  awk -F, 'NR > 1 && !($3 >= 0 && $3 <= 1) { exit 1 }' "$tmp/pred.csv"; then ok; else bad "predict CSV layout"; fi
run "predict vb target" 0 -- "$vbn" predict "$mm" --data "$mmd" --vb --train "$mmd" --target y --seed 1 &&
  expect "predict truth column" out "^ +row +node +p +truth$" &&
  expect "predict scores" out "^50 rows with the true value: accuracy [0-9.]+, log loss [0-9.]+, Brier score [0-9.]+$"
run "predict two posteriors" 1 -- "$vbn" predict "$mm" --data "$tmp/new.csv" --vb --train "$mmd" --draws "$tmp/mm_1.csv" &&
  expect "predict one posterior" err "--draws and --vb are two sources of the posterior: give one"
run "predict vb without train" 1 -- "$vbn" predict "$mm" --data "$tmp/new.csv" --vb && expect "train needed" err "--train"
run "predict unknown target" 1 -- "$vbn" predict "$mm" --data "$tmp/new.csv" --vb --train "$mmd" --target q && expect "unknown target" err "no node of that name"
run "predict draws of another model" 1 -- "$vbn" predict "$mm" --data "$tmp/new.csv" --draws "$tmp/fit_1.csv" &&
  expect "draws mismatch" err "fit_1\.csv: no column 'w\.1'"
printf 'o,y\n1,maybe\n' >"$tmp/newbad.csv"
run "predict bad row" 1 -- "$vbn" predict "$mm" --data "$tmp/newbad.csv" --vb --train "$mmd" && expect "predict bad row place" err "newbad\.csv:2:[0-9]+.*maybe"

printf 'node o ~ bernoulli(0.5);\nnode y ~ logistic(b + w * o);\nb, w ~ normal(0, 3);\n' >"$tmp/direct.vbn"
run "compare" 0 -- "$vbn" compare "$mm" "$tmp/direct.vbn" --data "$mmd" --evidence-draws 2000 --seed 1 &&
  expect "compare table" out "^model +ELBO +log evidence +se +k-hat$" && expect "compare row" out "direct\.vbn +-[0-9.]+ +-[0-9.]+ +[0-9.]+ +-?[0-9.]+$" &&
  expect "bayes factor" out "^log Bayes factor .* = -?[0-9.]+ ± [0-9.]+$" && expect "compare notes the tempering" out "^note: .*multimodal\.vbn: Pareto k-hat [0-9.]+ is above 0\.7, so its log evidence comes from tempering"
# compare's log evidence is vbn vb's, for the same draws and seed
cmp_le=$(awk '$1 ~ /direct\.vbn$/ {print $3 " " $4}' "$tmp/out")
run "vb evidence as compare" 0 -- "$vbn" vb "$tmp/direct.vbn" --data "$mmd" --correction-draws 2000 --seed 1
vb_le=$(sed -n 's/^log p(data) ~ \(-[0-9.]*\) +- \([0-9.]*\) .*/\1 \2/p' "$tmp/out")
if [ -n "$cmp_le" ] && [ "$cmp_le" = "$vb_le" ]; then ok; else bad "compare and vb give the same log evidence ('$cmp_le' vs '$vb_le')"; fi
run "compare data misfit" 1 -- "$vbn" compare "$mm" "$ex/paper/unimodal_d1.vbn" --data "$mmd" && expect "compare misfit" err "do not fit the model .*unimodal_d1\.vbn"
printf 'node o ~ bernoulli(0.5);\nnode y ~ logistic(b + w * o);\nnode z ~ logistic(c);\nb, w, c ~ normal(0, 3);\n' >"$tmp/more.vbn"
printf 'o,y,z\n1,1,1\n-1,1,-1\n' >"$tmp/more.csv"
run "compare other columns" 1 -- "$vbn" compare "$tmp/more.vbn" "$tmp/direct.vbn" --data "$tmp/more.csv" && expect "compare columns" err "observe different columns"
# --- one seed rule: without --seed every random command prints a fresh seed that repeats it --
# same_seed NAME -- command...: the command without --seed prints "note: seed S"; run again with
# --seed S it prints the same stdout (timings masked).
same_seed() {
  local name=$1
  shift 2
  run "$name, no seed" 0 -- "$@" || return
  local seed
  seed=$(sed -nE 's/^note: seed ([0-9]+) \(pass --seed \1 to repeat this run\)$/\1/p' "$tmp/err")
  if [ -z "$seed" ]; then bad "$name: no 'note: seed S' line"; sed 's/^/  stderr: /' "$tmp/err" | head; return; fi
  sed -E 's/[0-9.]+ ?(s|ms)\b/<t>/g' "$tmp/out" >"$tmp/first"
  run "$name, --seed $seed" 0 -- "$@" --seed "$seed" || return
  if sed -E 's/[0-9.]+ ?(s|ms)\b/<t>/g' "$tmp/out" | cmp -s - "$tmp/first"; then ok; else bad "$name: --seed $seed does not repeat the run"; fi
  if grep -q '^note: seed' "$tmp/err"; then bad "$name: a seed note although --seed was given"; else ok; fi
}
same_seed "simulate" -- "$vbn" simulate "$ex/paper/multimodal.vbn" --rows 20
same_seed "vb" -- "$vbn" vb "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --correction-draws 500
same_seed "predict --vb" -- "$vbn" predict "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --vb \
  --train "$ex/paper/multimodal.csv" --vb-draws 200
same_seed "compare" -- "$vbn" compare "$ex/wells/wells.vbn" "$ex/wells/wells_dist.vbn" --data "$ex/wells/wells.csv" \
  --evidence-draws 500
same_seed "fit" -- "$vbn" fit "$ex/paper/unimodal_d1.vbn" --data "$ex/paper/unimodal_d1.csv" --warmup 100 --draws 100
run "vb, one start, no correction" 0 -- "$vbn" vb "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --correction none \
  --restarts 1 &&
  if grep -q '^note: seed' "$tmp/err"; then bad "vb without random numbers announced a seed"; else ok; fi

# --- plots, progress, and R reading our files ---------------------------------------------
m=$ex/paper/multimodal.vbn
d=$ex/paper/multimodal.csv
run "fit for plots" 0 -- "$vbn" fit "$m" --data "$d" --seed 4 --warmup 200 --draws 300 --chains 2 --output "$tmp/mm.csv" --quiet
if grep -q '^# vb_mean = [-0-9.e]*, [-0-9.e]*$' "$tmp/mm_1.csv" && grep -q '^# vb_sd = ' "$tmp/mm_2.csv"; then ok; else bad "CSV header records the variational fit"; fi
run "plot" 0 -- "$vbn" plot "$tmp/mm_1.csv" "$tmp/mm_2.csv" --output-dir "$tmp/plots" && expect "plot lists pictures" out "wrote 4 pictures to .*density_1.png"
for f in trace_1 density_1 pairs_1 rank_1; do
  if [ "$(head -c 4 "$tmp/plots/$f.png" 2>/dev/null | tail -c 3)" = PNG ] && [ "$(wc -c <"$tmp/plots/$f.png")" -gt 5000 ]; then ok; else bad "plot $f.png is a PNG picture"; fi
done
for f in draws.dat density.dat ranks.dat pair_1.dat trace.gp density.gp pairs.gp rank.gp; do
  if [ -s "$tmp/plots/$f" ]; then ok; else bad "plot leaves $f for users to edit"; fi
done
if grep -q "gauss(x, .*title 'variational'" "$tmp/plots/density.gp"; then ok; else bad "plot draws the variational Gaussian from the CSV header"; fi
run "plot missing file" 1 -- "$vbn" plot "$tmp/none_1.csv" --output-dir "$tmp/p2" && expect "plot missing file" err "none_1\.csv"
run "plot needs --output-dir" 1 -- "$vbn" plot "$tmp/mm_1.csv" && expect "plot needs --output-dir" err "--output-dir is required"
run "plot without gnuplot" 1 -- env PATH=/nonexistent "$vbn" plot "$tmp/mm_1.csv" --output-dir "$tmp/p3" &&
  expect "plot without gnuplot" err "gnuplot is not installed.*apt-get install gnuplot-nox"
run "fit --plots" 0 -- "$vbn" fit "$m" --data "$d" --seed 4 --warmup 100 --draws 100 --chains 2 --plots "$tmp/fitplots" --quiet
if [ -s "$tmp/fitplots/density_1.png" ] && [ -s "$tmp/fitplots/trace_1.png" ]; then ok; else bad "fit --plots draws pictures"; fi
run "fit --plots without gnuplot" 1 -- env PATH=/nonexistent "$vbn" fit "$m" --data "$d" --seed 4 --plots "$tmp/p4" --quiet &&
  expect "fit --plots without gnuplot" err "gnuplot-nox"
# Progress on stderr when it is not a terminal: a line per chain and phase end at least.
run "progress" 0 -- "$vbn" fit "$m" --data "$d" --seed 5 --warmup 300 --draws 300 --chains 2
expect "progress warmup" err "^chain 2 warmup 300/300 \(100%\)$" && expect "progress sampling" err "^chain 1 sampling 300/300 \(100%\)$"
run "quiet" 0 -- "$vbn" fit "$m" --data "$d" --seed 5 --warmup 300 --draws 300 --chains 2 --quiet
if [ -s "$tmp/err" ]; then bad "--quiet writes nothing on stderr"; else ok; fi
# R reads what `vbn fit` wrote (rstan::read_stan_csv) and finds the means vbn summary prints.
if command -v Rscript >/dev/null; then
  run "vbn summary of plotted files" 0 -- "$vbn" summary "$tmp/mm_1.csv" "$tmp/mm_2.csv" && cp "$tmp/out" "$tmp/mm_table.txt"
  run "rstan reads vbn fit output" 0 -- Rscript -e 'f <- suppressMessages(rstan::read_stan_csv(commandArgs(TRUE))); s <- posterior::summarise_draws(posterior::as_draws_array(as.array(f)), "mean"); s <- s[s$variable != "lp__", ]; m <- as.vector(unclass(s$mean)); for (i in seq_len(nrow(s))) cat(s$variable[i], format(m[i], digits = 15), "\n")' "$tmp/mm_1.csv" "$tmp/mm_2.csv"
  n=0
  while read -r name mean; do
    ours=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/mm_table.txt")
    if awk -v a="$mean" -v b="$ours" 'BEGIN { d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; exit !(b != "" && d <= 5e-4 * s + 1e-12) }'; then n=$((n + 1)); else bad "rstan mean of $name is $mean, vbn summary says '$ours'"; fi
  done <"$tmp/out"
  if [ "$n" -eq 2 ]; then ok; else bad "rstan found $n of the 2 parameters"; fi
elif [ "${CI:-}" = true ] || [ "${VBN_REQUIRE_R:-}" = 1 ]; then
  bad "Rscript is not installed, but R is required here (CI=true or VBN_REQUIRE_R=1); scripts/install-deps.sh installs it"
else
  echo "SKIPPED: Rscript not found, so R did not read vbn fit's CSV files"
fi
# --- limits and interruption ---------------------------------------------------------------
m=$ex/paper/unimodal_d1.vbn
d=$ex/paper/unimodal_d1.csv
run "draws beyond memory" 1 -- "$vbn" fit "$m" --data "$d" --chains 4 --draws 2000000000 --seed 1 --quiet &&
  expect "draws beyond memory" err "error: keeping 4 chains × 2000000000 draws .* more than the .* GB of memory available; stream the draws to files with --output FILE.csv .* or ask for fewer draws \(--draws [0-9]+ would fit\)"
# Chains that may run on are capped by what memory holds, and the lowered cap is said.
run "max draws beyond memory" 0 -- "$vbn" fit "$m" --data "$d" --max-draws 2000000000 --seed 1 &&
  expect "max draws beyond memory" err "note: --max-draws lowered from 2000000000 to [0-9]+: the kept draws of 4 chains must fit in the .* GB of memory available"
# Beyond 2,000 parameters nothing holds a dense parameters × parameters matrix: regen is
# refused with a suggestion, vb skips its correction with a note, nuts uses a diagonal metric.
wide=$tmp/wide.vbn
printf 'node a ~ bernoulli(0.5);\nnode v[1001] ~ logistic(b + w * a);\nb ~ normal(0, 1);\nw ~ normal(0, 1);\n' >"$wide"
"$vbn" simulate "$wide" --rows 20 --seed 3 --output "$tmp/wide.csv" 2>/dev/null
run "regen beyond dense" 1 -- "$vbn" fit "$wide" --data "$tmp/wide.csv" --method regen --quiet &&
  expect "regen beyond dense" err "error: --method regen adapts dense 2002 x 2002 covariances, too large for 2002 parameters \(at most 2000\); use --method varblock, varmix or nuts"
run "vb beyond dense" 0 -- "$vbn" vb "$wide" --data "$tmp/wide.csv" &&
  expect "vb beyond dense" err "note: no importance correction: its Newton step needs a dense 2002 x 2002 Hessian" &&
  expect "vb beyond dense" out "^w\[1001\] "
run "compare beyond dense" 1 -- "$vbn" compare "$wide" "$wide" --data "$tmp/wide.csv" &&
  expect "compare beyond dense" err "wide\.vbn: no log evidence: the log evidence's importance sampling needs a dense 2002 x 2002 Hessian .*; the ELBO \(vbn vb\) is a lower bound"
for method in varblock nuts; do
  run "$method beyond dense" 0 -- "$vbn" fit "$wide" --data "$tmp/wide.csv" --method $method --chains 1 --warmup 20 \
    --draws 20 --seed 1 --quiet && expect "$method beyond dense" out "^w\[1001\] "
done
# NUTS's CSV records the adapted metric as CmdStan does: dense up to 2,000 parameters, else
# its diagonal.
if grep -q '^# Adaptation terminated' "$tmp/str_1.csv" && grep -q '^# Elements of inverse mass matrix:' "$tmp/str_1.csv" &&
  grep -q 'metric = dense_e' "$tmp/str_1.csv"; then ok; else bad "nuts CSV: the dense metric's adaptation block"; fi
run "nuts beyond dense csv" 0 -- "$vbn" fit "$wide" --data "$tmp/wide.csv" --method nuts --chains 1 --warmup 20 \
  --draws 20 --seed 1 --quiet --output "$tmp/wn.csv" &&
  if grep -q 'metric = diag_e' "$tmp/wn_1.csv" && grep -q '^# Diagonal elements of inverse mass matrix:' "$tmp/wn_1.csv"; then ok; else
    bad "nuts CSV beyond 2,000 parameters: a diagonal metric"; fi
# auto resolved to nuts (a node with more than 64 weights): the CSV header names hmc/nuts and
# records the dense metric NUTS adapted, as with --method nuts.
many=$tmp/many.vbn
printf 'node x[65] ~ bernoulli(0.5);\nnode y ~ logistic(w * x);\nw ~ normal(0, 1);\n' >"$many"
"$vbn" simulate "$many" --rows 40 --seed 3 --output "$tmp/many.csv" 2>/dev/null
run "auto nuts csv" 0 -- "$vbn" fit "$many" --data "$tmp/many.csv" --chains 1 --warmup 50 --draws 20 --seed 1 \
  --quiet --output "$tmp/an.csv" &&
  if grep -q 'algorithm = hmc' "$tmp/an_1.csv" && grep -q 'engine = nuts' "$tmp/an_1.csv" &&
    grep -q 'metric = dense_e' "$tmp/an_1.csv" && grep -q '^# Elements of inverse mass matrix:' "$tmp/an_1.csv"; then ok; else
    bad "auto resolved to nuts: the CSV header's algorithm and dense metric"; fi
# NUTS's target acceptance: 0.65 for this fully observed 65-parameter model (a note says so and
# the CSV header records it), 0.8 for a small one, --adapt-delta sets it and is range-checked.
if grep -q '^# delta = 0.65$' "$tmp/an_1.csv"; then ok; else bad "auto nuts on a log-concave 65-parameter posterior: delta 0.65 in the CSV header"; fi
run "auto nuts adapt delta note" 0 -- "$vbn" fit "$many" --data "$tmp/many.csv" --chains 1 --warmup 20 --draws 10 --seed 1 &&
  expect "target acceptance note" err "nuts: target acceptance 0\.65 \(log-concave posterior"
run "nuts adapt delta small" 0 -- "$vbn" fit "$m" --data "$d" --method nuts --chains 1 --warmup 20 --draws 10 --seed 1 \
  --quiet --output "$tmp/ad.csv" && if grep -q '^# delta = 0.8$' "$tmp/ad_1.csv"; then ok; else bad "nuts on a small model: delta 0.8"; fi
run "nuts adapt delta set" 0 -- "$vbn" fit "$many" --data "$tmp/many.csv" --chains 1 --warmup 20 --draws 10 --seed 1 \
  --adapt-delta 0.95 --quiet --output "$tmp/ad9.csv" && if grep -q '^# delta = 0.95$' "$tmp/ad9_1.csv"; then ok; else bad "--adapt-delta 0.95 in the CSV header"; fi
run "nuts adapt delta out of range" 1 -- "$vbn" fit "$m" --data "$d" --method nuts --adapt-delta 1 --seed 1 &&
  expect "adapt delta range" err "--adapt-delta must lie strictly between 0 and 1, got 1"
# varblock's overrelaxed moves after warmup: on by default for a well-fitted separable block (a
# note says so), off with --overrelax 0, and range-checked.
u5="$ex/paper/unimodal_d5"
run "varblock overrelax note" 0 -- "$vbn" fit "$u5.vbn" --data "$u5.csv" --chains 1 --warmup 50 --draws 20 --seed 1 \
  --output "$tmp/or.csv" && expect "overrelax note" err "after warmup 1 of them move by overrelaxed proposals \(alpha -0\.3\)" &&
  if grep -q '^# overrelax = -0.3$' "$tmp/or_1.csv"; then ok; else bad "varblock: overrelax in the CSV header"; fi
run "varblock overrelax off" 0 -- "$vbn" fit "$u5.vbn" --data "$u5.csv" --chains 1 --warmup 50 --draws 20 --seed 1 \
  --overrelax 0 && if grep -q "overrelaxed" "$tmp/err"; then bad "--overrelax 0 still overrelaxes"; else ok; fi
run "varblock overrelax out of range" 1 -- "$vbn" fit "$u5.vbn" --data "$u5.csv" --overrelax -1 --seed 1 &&
  expect "overrelax range" err "--overrelax must lie strictly between -1 and 1, got -1"
# SIGINT during fit with 4 chains on 2 threads: chains 1 and 2 stop after their iteration,
# chains 3 and 4 (waiting for a thread) start and stop at once. Every CSV file is valid and
# closed by its timing footer, the summary is over the chains with draws cut to the shortest,
# one warning line says so, and the status is 130.
# interrupted READY -- command...: runs the command in the background (stdout and stderr in
# $tmp/out and $tmp/err), waits until the function READY succeeds (at most 10 s), sends
# SIGINT and leaves the command's exit status in $st.
interrupted() {
  local ready=$1
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  for _ in $(seq 100); do "$ready" && break; sleep 0.1; done
  kill -INT "$pid"
  wait "$pid"
  st=$?
}
chain_1_has_draws() {  # grep prints nothing while the file does not exist yet
  local n
  n=$(grep -cv '^#' "$tmp/int_1.csv" 2>/dev/null || true)
  [ "${n:-0}" -gt 10 ]
}
interrupted chain_1_has_draws -- "$vbn" fit "$m" --data "$d" --chains 4 --threads 2 --warmup 20 --draws 1000000 --seed 3 \
  --output "$tmp/int.csv"
if [ "$st" -eq 130 ]; then ok; else bad "SIGINT during fit: exit status $st, expected 130"; sed 's/^/  stderr: /' "$tmp/err" | head; fi
expect "SIGINT warning" err "^warning: interrupted; chains of unequal length \(draws per chain: chain 1: [0-9]+, chain 2: [0-9]+, chain 3: 0, chain 4: 0\): the summary uses chain 1, chain 2 truncated to the shortest, [0-9]+ draws each; chain 3, chain 4 have no draws and are left out \(the CSV files hold every draw made\)$"
expect "SIGINT summary" out "^Inference for .*: method varblock, 2 chains x [0-9]+ draws after 20 warmup"
expect "SIGINT summary row" out "^w "
cp "$tmp/out" "$tmp/int_fit_out"
for c in 1 2 3 4; do
  f=$tmp/int_$c.csv
  rows=$(grep -v '^#' "$f" | tail -n +2 | wc -l)
  cols=$(grep -v '^#' "$f" | awk -F, '{print NF}' | sort -u | wc -l)
  want=$([ $c -le 2 ] && echo 1 || echo 0)  # chains 1 and 2 have draws, 3 and 4 none
  if [ "$([ "$rows" -gt 0 ] && echo 1 || echo 0)" -eq "$want" ] && [ "$cols" -eq 1 ] &&
     grep -q '^lp__,' "$f" && grep -q 'seconds (Total)' "$f"; then ok; else bad "SIGINT CSV $c: $rows draws, $cols distinct column counts, footer?"; fi
done
# vbn summary and vbn plot take the four files as the fit did: the same table, the same note.
run "summary of interrupted CSVs" 0 -- "$vbn" summary "$tmp"/int_{1,2,3,4}.csv &&
  expect "summary of interrupted" out "^Inference for .*: method varblock, 2 chains x [0-9]+ draws" &&
  expect "summary of interrupted note" err "^note: chains of unequal length \(draws per chain: .*int_1\.csv: [0-9]+, .*int_4\.csv: 0\): the summary uses .*int_1\.csv, .*int_2\.csv truncated to the shortest, [0-9]+ draws each; .*int_3\.csv, .*int_4\.csv have no draws and are left out$" &&
  if [ -n "$(grep '^w ' "$tmp/out")" ] && [ "$(grep '^w ' "$tmp/out")" = "$(grep '^w ' "$tmp/int_fit_out")" ]; then ok; else
    bad "vbn summary of the interrupted files differs from the fit's summary"; fi
if command -v gnuplot >/dev/null; then
  run "plot of interrupted CSVs" 0 -- "$vbn" plot "$tmp"/int_{1,2,3,4}.csv --output-dir "$tmp/intplots" &&
    expect "plot of interrupted" out "wrote [0-9]+ pictures" && expect "plot of interrupted note" err "^note: chains of unequal length"
else
  echo "SKIPPED: gnuplot not found, so vbn plot did not read the interrupted run's files"
fi
# Interrupted in warmup (3 chains on 1 thread): every file holds its header and footer only,
# there is nothing to summarise, and the status is still 130.
files_written() { [ -s "$tmp/iw_3.csv" ]; }
interrupted files_written -- "$vbn" fit "$m" --data "$d" --chains 3 --threads 1 --warmup 1000000000 --draws 10 --seed 3 \
  --output "$tmp/iw.csv"
if [ "$st" -eq 130 ]; then ok; else bad "SIGINT in warmup: exit status $st, expected 130"; sed 's/^/  stderr: /' "$tmp/err" | head; fi
expect "SIGINT in warmup" err "^error: interrupted before any chain kept a draw \(in warmup or before starting\): nothing to summarise$"
if [ "$(cat "$tmp"/iw_{1,2,3}.csv | grep -cv '^#')" -eq 3 ] && [ "$(grep -c 'seconds (Total)' "$tmp"/iw_{1,2,3}.csv | grep -c ':1$')" -eq 3 ]; then ok; else bad "SIGINT in warmup: each CSV file holds its header row and footer only"; fi
run "summary of files without draws" 1 -- "$vbn" summary "$tmp"/iw_{1,2,3}.csv &&
  expect "summary of files without draws" err "none of the 3 files holds a draw"
# SIGINT during vb --restarts: the best of the finished restarts is printed with a warning
# line, status 130. (Each restart of this model takes well under a millisecond; the signal is
# sent once the run has had a second, and again later if it came before the first finished.)
for wait_s in 1 3 6; do
  "$vbn" vb "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --restarts 2000000000 >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  sleep "$wait_s"
  kill -INT "$pid"
  wait "$pid"
  st=$?
  grep -q "interrupted before the first" "$tmp/err" || break
done
if [ "$st" -eq 130 ]; then ok; else bad "SIGINT during vb: exit status $st, expected 130"; sed 's/^/  stderr: /' "$tmp/err" | head -c 2000; fi
expect "SIGINT vb warning" err "^warning: interrupted after [0-9]+ of 2000000000 restarts; the fit above is the best of those \(no importance correction\)$"
expect "SIGINT vb table" out "^w\[1\] +-?[0-9.]+ +[0-9.]+"
expect "SIGINT vb ELBO" out "^ELBO -[0-9.]+ \(a lower bound on log p\(data\)\)"
expect "SIGINT vb restarts" out "^restarts \(ELBO\): "

# Hidden values in a small model: auto picks varmix, whose proposal is a t mixture fitted to
# the exact posterior (the fitted components and the prior), its only move; it accepts 82-85%
# of them (seeds 1-3), the modes' Laplace mixture it starts from 58-64%. Flipping h with w[1]
# is a symmetry only P(h = +1) = 0.6 and the prior break: the symmetry jumps run after each
# move, and the flipped copy's share of the draws and its importance estimate are the grid's
# 18.2% (19.28% +- 0.64% and 19.26% +- 0.64% at seed 1).
run "auto varmix on bimodal" 0 -- "$vbn" fit "$ex/paper/bimodal.vbn" --data "$ex/paper/bimodal.csv" --seed 1 &&
  expect "auto chose varmix" err "auto chose varmix" &&
  expect "varmix fitted mixture" out "^Acceptance: mixture independence mh \([0-9]+ components\) ([7-9][0-9]|100)\.[0-9]% \([0-9]+ of [0-9]+\); symmetry jump [0-9.]+% \([0-9]+ of [0-9]+\)$" &&
  expect "flipped copy weighed" out "^Minor modes \(flipped copies: share of draws \+- mcse; importance sampling \+- mcse\): h 1[5-9]\.[0-9]+% \+- [0-9.]+%, 1[5-9]\.[0-9]+% \+- [0-9.]+%$"
# The note says which proposal that is (3 t's and the prior: 4 components), and the Laplace
# proposal, which the mode mixture replaces, is neither built nor noted.
run "varmix mixture note" 0 -- "$vbn" fit "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --method varmix --seed 1 --warmup 200 --draws 200 &&
  expect "varmix mixture note" err "^note: varmix: independence proposal from a mixture of 3 t's and the prior, fitted to the exact posterior by population Monte Carlo \([0-9] rounds?\) from the mode found by Newton from 17 starts; importance ESS [0-9]+% of the draws, k-hat -?[0-9.]+$" &&
  expect "varmix mixture components" out "^Acceptance: mixture independence mh \(4 components\)" &&
  if grep -q "independence proposal: t(30)" "$tmp/err"; then bad "varmix with modes still notes the unused Laplace proposal"; else ok; fi
run "regen modes note" 0 -- "$vbn" fit "$ex/paper/multimodal.vbn" --data "$ex/paper/multimodal.csv" --method regen --seed 1 --warmup 200 --draws 200 &&
  expect "regen modes note" err "^note: regen: starting proposal t\(4\) with the mean and covariance \(x 2\) of the Laplace fits at the mode found by Newton from 17 starts$" &&
  if grep -q "independence proposal: t(30)" "$tmp/err"; then bad "regen with modes still notes the unused Laplace proposal"; else ok; fi

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
