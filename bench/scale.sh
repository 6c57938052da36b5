#!/usr/bin/env bash
# Scale: time and peak memory (RSS) of `vbn` on large inputs, per stage.
#   bench/scale.sh path/to/vbn [ROWS] [NODES] [CASES]
#       (defaults: 1000000 rows, 10000 nodes, CASES = logreg,wide,many,stream)
#
# logreg  ROWS rows x 10 real covariates, no two rows alike (bench/scale_data.py, seed 1):
#         covariate x[10]; node y ~ logistic(b + w * x). Stages: load (vbn check --data),
#         vb (with its default importance correction), fit (4 chains x 1000 draws).
# wide    ROWS rows x 50 binary columns: node x[10] ~ bernoulli(0.5); node y[40] ~ logistic(b + W x).
# many    NODES nodes: one parent shared by NODES - 1 children, 1000 rows.
# wide and many: load, vb, fit with 1000 draws (1 chain, 200 warmup), with --output.
# stream  10 x ROWS rows of 8 binary columns, values missing (bench/stream_data.py, seed 1):
#         node x[3] ~ logistic(a); node y[5] ~ logistic(b + W * x), at most 6,561 distinct
#         rows. Stages: load, vb, fit (4 chains x 1000 draws), each reading the whole file.
# shards  the logreg input, fit by NUTS (2 chains x 500 warmup + 500 draws): in one process
#         with 2 threads, then with the rows sharded (--shards 8) under mpirun: 1 rank with 2
#         threads, 2 and 4 ranks with 1 thread each (4 oversubscribed on 2 cores); then vbn vb
#         (EM and its importance correction) in one process and over 8 shards on 1, 2, 4 ranks. Needs a VBN_MPI build of vbn (docs/mpi.md) as MPI_VBN,
#         else PATH/TO/vbn must be one. Peak RSS is the largest process's.
# Memory should grow with the number of distinct rows (patterns) and nodes, not with ROWS.
#
# Each stage appends a line to bench/results/scale.tsv (or $SCALE_TSV): date, commit, case,
# rows, columns, stage, wall seconds, CPU seconds (user + system) and peak RSS
# (/usr/bin/time -f "%e %U %S %M"), the 1-minute load average before the stage, and the
# machine's cores. On a shared machine the CPU seconds are the steadier figure. bench/scale_table.py writes the
# table in bench/scale.md from that file.
set -euo pipefail
vbn=$(realpath "$1")
rows=${2:-1000000}
nodes=${3:-10000}
cases=${4:-logreg,wide,many,stream}
here=$(cd "$(dirname "$0")" && pwd)
tsv=${SCALE_TSV:-$here/results/scale.tsv}
# The commit the binary was built from (SCALE_COMMIT, else this checkout's HEAD, + if modified;
# the results and the table this script feeds do not count, so that runs in a row agree).
commit=${SCALE_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${SCALE_COMMIT:-}" ] && [ -n "$(git -C "$here" status --porcelain --untracked-files=no -- ':/' \
      ':(top,exclude)bench/results' ':(top,exclude)bench/scale.md' 2>/dev/null)" ]; then
  commit="$commit+"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 1; }
[ -s "$tsv" ] || printf 'date\tcommit\tcase\trows\tcolumns\tstage\tseconds\tcpu_seconds\tpeak_rss_mb\tload1\tcores\n' >"$tsv"

measure() {  # measure CASE ROWS COLUMNS STAGE command...
  local case=$1 r=$2 c=$3 stage=$4
  shift 4
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  local wall user sys kb
  read -r wall user sys kb <"$tmp/time"
  local mb cpu
  mb=$(awk -v kb="$kb" 'BEGIN { printf "%.1f", kb / 1024 }')
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf '%-8s %-6s %-44s wall %8s s   CPU %8s s   peak RSS %8s MB   load %s\n' "$case" "$r" "$stage" "$wall" "$cpu" "$mb" "$load"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit" "$case" "$r" "$c" "$stage" \
    "$wall" "$cpu" "$mb" "$load" "$(nproc)" >>"$tsv"
}

run_case() {  # run_case CASE MODEL CSV ROWS COLUMNS FIT_ARGS...
  local case=$1 model=$2 csv=$3 r=$4 c=$5
  shift 5
  measure "$case" "$r" "$c" "load (check --data)" "$vbn" check "$model" --data "$csv"
  measure "$case" "$r" "$c" "vb" "$vbn" vb "$model" --data "$csv" --seed 1
  measure "$case" "$r" "$c" "$1" "$vbn" fit "$model" --data "$csv" "${@:2}" --seed 1 --quiet --output "$tmp/${case}_fit.csv"
}

for case in ${cases//,/ }; do
  case $case in
  logreg)
    # Python's Mersenne Twister with seed 1: the same file on every machine (199 MB at 10^6 rows).
    python3 "$here/scale_data.py" "$rows" 10 1 "$tmp/logreg.csv" >"$tmp/logreg.vbn"
    echo "== logreg: $rows rows x 10 real covariates ($(du -h "$tmp/logreg.csv" | cut -f1) of CSV)"
    run_case logreg "$tmp/logreg.vbn" "$tmp/logreg.csv" "$rows" 11 "fit 4 chains x 1000 draws" --chains 4 --draws 1000
    ;;
  wide)
    cat >"$tmp/wide.vbn" <<'M'
node x[10] ~ bernoulli(0.5);
node y[40] ~ logistic(b + W * x);
b ~ normal(0, 2);
W ~ normal(0, 1);
M
    "$vbn" simulate "$tmp/wide.vbn" --rows "$rows" --seed 1 --output "$tmp/wide.csv" 2>/dev/null
    echo "== wide: $rows rows x 50 binary columns ($(du -h "$tmp/wide.csv" | cut -f1) of CSV)"
    run_case wide "$tmp/wide.vbn" "$tmp/wide.csv" "$rows" 50 "fit 1 chain x 1000 draws" --chains 1 --warmup 200 --draws 1000
    ;;
  many)
    cat >"$tmp/many.vbn" <<M
node a ~ bernoulli(0.5);
node v[$((nodes - 1))] ~ logistic(b + w * a);
b ~ normal(0, 1);
w ~ normal(0, 1);
M
    "$vbn" simulate "$tmp/many.vbn" --rows 1000 --seed 2 --output "$tmp/many.csv" 2>/dev/null
    echo "== many: $nodes nodes, 1000 rows, $((2 * (nodes - 1))) parameters"
    run_case many "$tmp/many.vbn" "$tmp/many.csv" 1000 "$nodes" "fit 1 chain x 1000 draws" --chains 1 --warmup 200 --draws 1000
    ;;
  stream)
    srows=$((rows * 10))
    python3 "$here/stream_data.py" "$srows" 1 "$tmp/stream.csv" >"$tmp/stream.vbn"
    echo "== stream: $srows rows x 8 binary columns, values missing ($(du -h "$tmp/stream.csv" | cut -f1) of CSV)"
    run_case stream "$tmp/stream.vbn" "$tmp/stream.csv" "$srows" 8 "fit 4 chains x 1000 draws" --chains 4 --draws 1000
    rm -f "$tmp/stream.csv"
    ;;
  shards)
    mpi_vbn=$(realpath "${MPI_VBN:-$vbn}")
    python3 "$here/scale_data.py" "$rows" 10 1 "$tmp/logreg.csv" >"$tmp/logreg.vbn"
    echo "== shards: $rows rows x 10 real covariates, NUTS, one process against MPI ranks"
    nuts=(fit "$tmp/logreg.vbn" --data "$tmp/logreg.csv" --method nuts --chains 2 --warmup 500 --draws 500 --seed 1 --quiet)
    measure shards "$rows" 11 "fit nuts 2 chains, 1 process x 2 threads" "$mpi_vbn" "${nuts[@]}"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # mpirun binds each rank to one core: one rank with two threads must be let off that.
    measure shards "$rows" 11 "fit nuts 2 chains, --shards 8, 1 rank x 2 threads" \
      mpirun --bind-to none -np 1 "$mpi_vbn" "${nuts[@]}" --shards 8 --threads 2
    for np in 2 4; do
      measure shards "$rows" 11 "fit nuts 2 chains, --shards 8, $np ranks x 1 thread" \
        mpirun --oversubscribe -np "$np" "$mpi_vbn" "${nuts[@]}" --shards 8 --threads 1
    done
    # The variational EM and its importance correction (vbn vb's default) over the shards.
    vb=(vb "$tmp/logreg.vbn" --data "$tmp/logreg.csv" --seed 1)
    measure shards "$rows" 11 "vb, 1 process" "$mpi_vbn" "${vb[@]}"
    # One rank runs a correction thread per core: let off mpirun's binding to one core, as above.
    measure shards "$rows" 11 "vb, --shards 8, 1 rank" mpirun --bind-to none -np 1 "$mpi_vbn" "${vb[@]}" --shards 8
    for np in 2 4; do
      measure shards "$rows" 11 "vb, --shards 8, $np ranks" mpirun --oversubscribe -np "$np" "$mpi_vbn" "${vb[@]}" --shards 8
    done
    ;;
  *)
    echo "unknown case $case (logreg, wide, many, stream, shards)" >&2
    exit 2
    ;;
  esac
done
echo "appended to $tsv; python3 bench/scale_table.py rewrites the table in bench/scale.md"
