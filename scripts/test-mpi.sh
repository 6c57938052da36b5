#!/usr/bin/env bash
# The VBN_MPI build (docs/mpi.md): builds vbn with Open MPI into BUILD_DIR, then runs
# `vbn fit --shards 4` under `mpirun -np 1`, `-np 2` and `-np 4` on this machine (loopback,
# oversubscribed where there are fewer cores) and checks that every chain's draws are the same
# bytes whatever the number of ranks: on a logistic regression with covariates and on a hidden
# chain summed out by elimination. Then the errors: a bad value in rows only rank 1 holds, and
# ranks given different models, each end the run with rank 0's message and a non-zero status.
#   scripts/test-mpi.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-mpi}
jobs=$(nproc 2>/dev/null || echo 2)
cd "$root"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVBN_WERROR=ON -DVBN_BUILD_TESTS=OFF -DVBN_BUILD_BENCH=OFF \
      -DVBN_BUILD_FUZZ=OFF -DVBN_NATIVE=ON -DVBN_SANITIZE= -DVBN_MPI=ON > /dev/null
cmake --build "$build" -j"$jobs" --target vbn
vbn=$(realpath "$build/tools/vbn/vbn")
# mpirun refuses to start as root unless told that is meant (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# Every chain file of run $1 against run $2, comments (timings, the command) left out.
same_draws() {
  local a=$1 b=$2 c
  for c in 1 2 3 4; do
    if ! cmp -s <(grep -v '^#' "$a/f_$c.csv") <(grep -v '^#' "$b/f_$c.csv"); then
      echo "FAIL: chain $c of $(basename "$a") and $(basename "$b") differ"
      failed=1
    fi
  done
}

check_model() {
  local name=$1 model=$2 data=$3 np
  for np in 1 2 4; do
    mkdir -p "$tmp/$name-$np"
    "${mpi[@]}" -np "$np" "$vbn" fit "$model" --data "$data" --shards 4 --seed 7 --warmup 200 --draws 200 \
      --output "$tmp/$name-$np/f.csv" --quiet > "$tmp/$name-$np/summary.txt"
  done
  grep -q "method nuts" "$tmp/$name-1/summary.txt" || { echo "FAIL: $name did not run NUTS"; failed=1; }
  same_draws "$tmp/$name-1" "$tmp/$name-2"
  same_draws "$tmp/$name-1" "$tmp/$name-4"
  echo "$name: -np 1, 2 and 4 compared"
}

check_model wells examples/wells/wells.vbn examples/wells/wells.csv
check_model hidden_chain examples/chain/hidden_chain.vbn examples/chain/hidden_chain.csv

# The run must fail with status $1 != 0 and rank 0's message holding $2.
expect_failure() {
  local want=$1 status=0
  shift
  "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" || status=$?
  if [ "$status" = 0 ] || ! grep -qF -- "$want" "$tmp/err.txt"; then
    echo "FAIL: expected a failure saying '$want' from: $*"
    cat "$tmp/err.txt"
    failed=1
  fi
}
# Data row 1 (line 3) is shard 1 of 2, which rank 1 alone reads.
{ head -n 2 examples/wells/wells.csv; echo "1,abc,0.3"; tail -n +4 examples/wells/wells.csv; } > "$tmp/bad.csv"
expect_failure "rank 1 of 2: $tmp/bad.csv:3:2:" \
  "${mpi[@]}" -np 2 "$vbn" fit examples/wells/wells.vbn --data "$tmp/bad.csv" --shards 2 --quiet
# Two models with the same columns but different parameters, one per rank (MPMD).
expect_failure "rank 1 of 2 read a different model" \
  "${mpi[@]}" -np 1 "$vbn" fit examples/wells/wells.vbn --data examples/wells/wells.csv --shards 2 --quiet \
  : -np 1 "$vbn" fit examples/wells/wells_dist.vbn --data examples/wells/wells.csv --shards 2 --quiet
echo "errors: checked"

if [ "$failed" != 0 ]; then
  echo "test-mpi: FAILED"
  exit 1
fi
echo "test-mpi: passed"
