#!/usr/bin/env bash
# Installs what the build needs (Debian 12, as root), builds vbn and runs it on a bundled
# example: the multimodal model of the Variational MCMC paper (Sec. 5.2) — check it against
# its data, fit the variational posterior, then sample the exact posterior.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/install-deps.sh; fi
# The build directory scripts/test.sh uses too (the library is compiled once for both); each
# script configures the options it needs, so either may run first.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DVBN_BUILD_TESTS=OFF -DVBN_BUILD_BENCH=OFF \
      -DVBN_BUILD_FUZZ=OFF -DVBN_SANITIZE=
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"
vbn=build/tools/vbn/vbn
set -x
"$vbn" check examples/paper/multimodal.vbn --data examples/paper/multimodal.csv
"$vbn" vb examples/paper/multimodal.vbn --data examples/paper/multimodal.csv
"$vbn" fit examples/paper/multimodal.vbn --data examples/paper/multimodal.csv --seed 1 --quiet \
      --output build/multimodal.csv --summary-json build/multimodal.json
