#!/usr/bin/env bash
# Builds the libFuzzer targets (only them) with Clang, ASan and UBSan, and runs each for a
# bounded time from the committed corpus (fuzz/corpus/TARGET, grown by long runs) and seeds
# from the examples and the golden error tests (fuzz/make-corpus.sh). Fails on any
# crash, sanitizer report, leak, timeout or out-of-memory; the input that caused it is left
# in BUILD/fuzz-artifacts/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR]      (defaults: 60, build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${2:-build-fuzz}"
jobs=$(nproc 2>/dev/null || echo 2)

# A unity build (batches of 8 sources, as the sanitizer stages of scripts/test.sh): the
# libraries' shared headers are parsed once a batch rather than once a file.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
      -DVBN_BUILD_FUZZ=ON -DVBN_BUILD_TESTS=OFF -DVBN_WERROR=ON ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER}
cmake --build "$build" -j"$jobs" --target fuzz_model fuzz_csv fuzz_model_data

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
fuzz/make-corpus.sh "$corpus"

run() {  # run TARGET CORPUS DICT: its report in $build/TARGET.log, libFuzzer's status in $build/TARGET.status
  set +e
  {
    echo "== $1: ${seconds}s"
    # New inputs go to the first directory, the build's; the committed corpus is only read.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz/$1" "$2" "fuzz/corpus/$1" -dict="$3" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$1-" 2>&1 |
      grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)'
    echo "${PIPESTATUS[0]}" >"$build/$1.status"  # libFuzzer's status, not grep's
  } >"$build/$1.log"
  set -e
}
# The targets are independent single-threaded processes: run as many at once as there are
# cores, each for the full time (on 2 cores the stage takes 2 × SECONDS instead of 3 ×).
targets=("fuzz_model $corpus/model fuzz/vbn.dict" "fuzz_csv $corpus/csv fuzz/csv.dict"
         "fuzz_model_data $corpus/model_data fuzz/vbn.dict")
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  # shellcheck disable=SC2086  # the three words are TARGET CORPUS DICT
  run $t &
done
wait
status=0
for t in "${targets[@]}"; do
  name=${t%% *}
  cat "$build/$name.log"
  [ "$(cat "$build/$name.status" 2>/dev/null)" = 0 ] || status=1
done
if [ "$status" != 0 ]; then
  echo "fuzzing found a problem; inputs in $artifacts:" >&2
  ls -l "$artifacts" >&2
fi
exit "$status"
