#!/usr/bin/env bash
# The layering of docs/design.md §1, checked on every #include "…" of the sources: a folder
# includes only itself and the folders below it. Prints each include that breaks the order and
# exits 1 if there is one.
#   scripts/check-layering.sh [REPOSITORY]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
# rank: a folder may include folders of lower rank and its own; lang and inference, both at
# the bottom, know nothing of each other; the three front ends at the top know nothing of
# each other either.
rank() {
  case $1 in
    include/*) echo 0 ;;
    python/*) echo 1 ;;  # the Python module binds the public API (include/) and nothing else
    lang/*) echo 1 ;;
    inference/*) echo 1 ;;
    runtime/error.hpp | runtime/index.hpp) echo 2 ;;
    runtime/data/*) echo 3 ;;
    runtime/target/*) echo 4 ;;
    runtime/distributed/*) echo 5 ;;
    runtime/variational/*) echo 6 ;;
    runtime/sampling/*) echo 7 ;;
    runtime/report/*) echo 8 ;;
    runtime/predictive/*) echo 9 ;;
    runtime/services/*) echo 10 ;;
    validation/* | tools/* | api/*) echo 11 ;;
    *) echo -1 ;;
  esac
}
folder() { case $1 in runtime/error.hpp | runtime/index.hpp) echo runtime ;; runtime/* | tools/*) echo "$1" | cut -d/ -f1-2 ;; *) echo "${1%%/*}" ;; esac; }
bad=0 checked=0
while IFS= read -r file; do
  from=$(rank "$file")
  [ "$from" -lt 0 ] && continue
  while IFS= read -r inc; do
    [ -e "$inc" ] || [ -e "include/$inc" ] || continue  # a system or third-party header
    [ -e "$inc" ] || inc="include/$inc"
    checked=$((checked + 1))
    to=$(rank "$inc")
    [ "$(folder "$inc")" = "$(folder "$file")" ] && continue
    if [ "$to" -ge "$from" ] && [ "$to" -ge 0 ]; then
      echo "$file includes $inc, which is not below it"; bad=$((bad + 1))
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files 'include/*' 'lang/*' 'inference/*' 'runtime/*' 'validation/*' 'tools/*' 'api/*' 'python/*' | grep -E '\.(hpp|cpp)$')
echo "layering: $checked includes checked, $bad out of order"
[ "$bad" = 0 ]
