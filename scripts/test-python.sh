#!/usr/bin/env bash
# The Python package against a configured build directory: builds only the module there
# (VBN_CMAKE_BUILD_DIR), installs it into a fresh virtual environment with pip as
# docs/python.md says (offline: Debian's setuptools, numpy and pandas), and runs its pytest
# suite, which compares it with that build's vbn binary.
#   scripts/test-python.sh [BUILD_DIR]      (PYTHON: the interpreter)
# The default interpreter is Debian's /usr/bin/python3, the one its python3-* packages
# (pybind11, numpy, pandas) are installed for, even when another python3 comes first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
venv=$build/python-venv
rm -rf "$venv"
python=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
"$python" -m venv --system-site-packages "$venv"
VBN_CMAKE_BUILD_DIR=$build CMAKE_BUILD_PARALLEL_LEVEL=$(nproc 2>/dev/null || echo 2) \
  "$venv/bin/pip" install --quiet --no-index --no-build-isolation ./python
# From the repository root, so that `import vbn` finds the installed package, not python/vbn.
VBN_BINARY=$build/tools/vbn/vbn "$venv/bin/python" -m pytest -q python/tests
