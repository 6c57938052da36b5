#!/usr/bin/env bash
# Installs what the build needs (Debian 12, as root), builds vbn and the benchmarks with -Werror
# and runs the whole test suite, checks the installed package with examples/embed and tests the
# Python package (scripts/test-python.sh), and the MPI build (scripts/test-mpi.sh); then
# builds it again without -march=native under AddressSanitizer + UndefinedBehaviorSanitizer and
# runs the suite once more; then runs
# the threaded tests under ThreadSanitizer; then fuzzes the model and CSV readers for a
# bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage says when it starts, in seconds since this script did: CI has a time limit, and
# this is where a run's minutes went.
stage() { echo "== test.sh: $1 ($SECONDS s)"; }
stage "dependencies"
if [ "$(id -u)" = 0 ]; then scripts/install-deps.sh; fi
jobs=$(nproc 2>/dev/null || echo 2)

# Every stage configures what it needs explicitly: a build directory left by scripts/demo.sh
# (tests off) or configured by hand is reconfigured, not trusted; and ctest fails when it finds
# no tests instead of passing.
stage "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DVBN_WERROR=ON -DVBN_BUILD_TESTS=ON \
      -DVBN_BUILD_BENCH=ON -DVBN_BUILD_FUZZ=OFF -DVBN_NATIVE=ON -DVBN_SANITIZE=
cmake --build build -j"$jobs"  # the benchmarks too (bench/), so that they keep compiling
stage "release ctest"
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"
# The installed package, as a host project uses it (examples/embed against a temporary prefix).
stage "embed"
bash scripts/check-embed.sh build
# The Python package: its module built into build/, installed with pip, its pytest suite.
stage "python"
bash scripts/test-python.sh build
# The VBN_MPI build: the same draws under mpirun -np 1, 2 and 4, and errors on any rank.
stage "mpi"
bash scripts/test-mpi.sh build-mpi

# The sanitizer build is also the portable one (-DVBN_NATIVE=OFF, no -march=native): the code
# paths a binary for other x86-64 CPUs takes are tested here rather than in a build of their own.
# Sanitized builds use -O1 with line tables only (-g1): enough for the sanitizers' stack traces,
# and they compile 2.5 times faster than -O2 -g (test_kernels.cpp: 65 s against 166 s).
sanitized="-O1 -g1 -DNDEBUG"
# The sanitizer stages compile as unity builds: CMake joins each target's sources into batches
# of 8 files, so the headers they share (Eigen, Boost, fmt, doctest) are parsed once a batch
# rather than once a file. The Release build above keeps compiling every file alone, so that
# each file's own #includes stay checked (a file that compiles only because a batch-mate
# included something for it fails there).
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
stage "asan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVBN_WERROR=ON -DVBN_BUILD_TESTS=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitized" "${unity[@]}" \
      -DVBN_BUILD_BENCH=OFF -DVBN_BUILD_FUZZ=OFF -DVBN_NATIVE=OFF -DVBN_SANITIZE=address,undefined
cmake --build build-asan -j"$jobs"
stage "asan ctest"
# The same entries, but runtime_sbc runs only the SBC code's own cases here (tests/CMakeLists.txt
# says why): its calibration runs are statistics, checked by the release ctest above.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs"

# ThreadSanitizer on what runs threads: the embedding API (fits in concurrent threads) and the
# parallel chain runner and the worker threads under it. Builds only those two test binaries;
# test_threads holds just test_inference's two threaded files (tests/CMakeLists.txt), so this
# stage compiles neither the other ten inference test files nor the validation library.
stage "tsan"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVBN_WERROR=ON -DVBN_BUILD_TESTS=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitized" "${unity[@]}" \
      -DVBN_BUILD_BENCH=OFF -DVBN_BUILD_FUZZ=OFF -DVBN_NATIVE=ON -DVBN_SANITIZE=thread
cmake --build build-tsan -j"$jobs" --target test_api test_threads
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/test_api
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/test_threads

# Fuzzing: the libFuzzer targets alone, built with Clang + ASan + UBSan, 60 s each.
stage "fuzz"
scripts/fuzz.sh 60 build-fuzz
stage "done"
