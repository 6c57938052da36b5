#!/usr/bin/env bash
# The embedding package as a host project sees it: installs the Release build in BUILD_DIR
# into a temporary prefix, builds examples/embed against it with find_package(vbn), runs it
# and checks what it prints (docs/embedding.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
test -x "$tmp/prefix/bin/vbn"
test -f "$tmp/prefix/include/vbn/vbn.hpp"
cmake -S examples/embed -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/build" > /dev/null
"$tmp/build/embed" > "$tmp/out.txt" 2> "$tmp/err.txt"
# The run: every draw streamed, progress on stderr, the three weights near the values the
# data were simulated with (b = -0.5, w = (1, 1.5)), the chains agreeing.
grep -q '^data: 500 rows' "$tmp/out.txt"
grep -q '^streamed 4000 draws$' "$tmp/out.txt"
grep -q '^chain 4 sampling 1000/1000$' "$tmp/err.txt"
awk '
  $1 == "b"    { b = $3 }
  $1 == "w[1]" { w1 = $3 }
  $1 == "w[2]" { w2 = $3 }
  $1 ~ /^(b|w\[1\]|w\[2\])$/ { if ($NF > 1.01) bad = 1; rows++ }
  END { ok = rows == 3 && !bad && b > -0.9 && b < -0.2 && w1 > 0.7 && w1 < 1.4 && w2 > 1.0 && w2 < 2.2; exit ok ? 0 : 1 }
' "$tmp/out.txt" || { echo "examples/embed printed an unexpected posterior:"; cat "$tmp/out.txt"; exit 1; }
# The prediction near the simulating model's 1 / (1 + exp(-1.25)) = 0.777, and the log
# evidence above the ELBO with a reliable k-hat.
awk '
  /^P\(symptom = \+1 \| exposed, dose 0.5\) = / { p = $NF; seen_p = 1 }
  /^log evidence / { ev = $3 + 0; se = $5 + 0; k = $7 + 0; elbo = $9 + 0; seen_e = 1 }
  END { ok = seen_p && seen_e && p > 0.65 && p < 0.88 && se > 0 && k < 0.7 && elbo < ev; exit ok ? 0 : 1 }
' "$tmp/out.txt" || { echo "examples/embed printed an unexpected prediction or evidence:"; cat "$tmp/out.txt"; exit 1; }
echo "examples/embed built against an installed vbn and ran: ok"
