#!/usr/bin/env bash
# Installs the Debian packages vbn builds and tests with. Run as root on Debian 12.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build python3
  libboost-dev libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
  libbenchmark-dev
  # vbn plot / fit --plots draw with gnuplot; the tests check that R reads our CmdStan CSV
  # files (rstan::read_stan_csv) and that posterior's diagnostics agree with ours.
  gnuplot-nox r-base-core r-cran-rstan r-cran-posterior
  r-cran-mlbench  # HouseVotes84, the real data of tests/corpus/housevotes (make_data.R)
  graphviz  # tests/cli/run.sh checks that dot reads vbn check --dot's graphs
  clang libclang-rt-14-dev  # the libFuzzer targets in fuzz/ (scripts/fuzz.sh)
  # the Python package (python/, docs/python.md): pybind11, and pip installing it offline
  python3-pybind11 pybind11-dev python3-dev python3-numpy python3-pandas python3-pytest python3-venv python3-pip
  python3-setuptools python3-wheel
  python3-xarray python3-netcdf4  # FitResult.to_netcdf, ArviZ's InferenceData schema
  libopenmpi-dev openmpi-bin  # the VBN_MPI build: rows sharded over MPI ranks (scripts/test-mpi.sh)
)
if [ "${1:-}" = "--with-tools" ]; then
  packages+=(gnuplot-nox)  # bench/multimodal_figures.sh draws the paper's Fig. 14-16
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
