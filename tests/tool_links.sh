#!/usr/bin/env bash
# With VBN_STATIC_TOOL (tools/vbn/CMakeLists.txt) the vbn executable needs no shared C++
# runtime and no libfmt: its dynamic section names only the C library's parts. It must still
# run (the version flag) and format numbers (fmt's compiled part, built in).
set -euo pipefail
vbn=$1
needed=$(readelf -d "$vbn" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -q '^libc\.so' || { echo "no libc among the needed libraries: $needed"; exit 1; }
if echo "$needed" | grep -E '^(libstdc\+\+|libgcc_s|libfmt)'; then
  echo "the vbn executable still needs the shared libraries above"
  exit 1
fi
"$vbn" --version | grep -q '^vbn '
paper="$(dirname "$0")/../examples/paper"
"$vbn" vb "$paper/unimodal_d1.vbn" --data "$paper/unimodal_d1.csv" | grep -Eq '^w +0\.9[0-9]* +0\.0[0-9]+ '
