#!/bin/sh
# One benchmark window: Stan and JAGS (bench/peers/run_peers.R), then `vbn fit`
# (bench/speed_table), side by side on this machine, with the machine's facts, into
# bench/results/windows/<UTC date-time>/:
#
#   machine.tsv   commit, CPU, nproc, load average before / between / after, R, rstan, Stan,
#                 JAGS and vbn versions
#   peers.tsv     run_peers.R's rows (and peers.log, its output: compile times, R start-up)
#   vbn.tsv       speed_table's rows, one per run
#
#   bench/run_window.sh [VBN]        # VBN defaults to build/tools/vbn/vbn
#
# WINDOW_REPEAT (default 20) runs of each vbn method; WINDOW_METHODS (default
# auto,varblock,regen,varmix,nuts); PEERS_SEEDS and PEERS_JAGS_SEEDS: see run_peers.R.
# Then `python3 bench/make_tables.py` regenerates the tables. bimodal has no peer programs.
set -eu
vbn=$(realpath "${1:-$(dirname "$0")/../build/tools/vbn/vbn}")
cd "$(dirname "$0")/.."   # relative paths from here on: the logs name no machine's folders
root=.
dir=bench/results/windows/$(date -u +%Y-%m-%dT%H%MZ)
mkdir -p "$dir"
load() { cut -d' ' -f1-3 /proc/loadavg; }
fact() { printf '%s\t%s\n' "$1" "$2" >> "$dir/machine.tsv"; }
: > "$dir/machine.tsv"
fact started "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
fact commit "$(git -C "$root" describe --always --dirty --abbrev=12)"
fact cpu "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
fact nproc "$(nproc)"
fact vbn "$("$vbn" --version 2>&1 | head -1)"
fact R "$(Rscript -e 'cat(R.version.string)' 2>/dev/null)"
fact rstan "$(Rscript -e 'suppressMessages(library(rstan)); cat(as.character(packageVersion("rstan")), "Stan", stan_version())' 2>/dev/null)"
fact jags "$(Rscript -e 'suppressMessages(library(rjags)); cat(as.character(packageVersion("rjags")), "JAGS", as.character(jags.version()))' 2>/dev/null)"
fact settings "WINDOW_REPEAT=${WINDOW_REPEAT:-20} PEERS_SEEDS=${PEERS_SEEDS:-20} PEERS_JAGS_SEEDS=${PEERS_JAGS_SEEDS:-5} WINDOW_METHODS=${WINDOW_METHODS:-auto,varblock,regen,varmix,nuts}"
fact load_before "$(load)"

paper=examples/paper
Rscript "$root/bench/peers/run_peers.R" "$dir/peers.tsv" \
    "U:$paper/unimodal_d1.csv" "U:$paper/unimodal_d5.csv" "U:$paper/unimodal_d10.csv" \
    "U:$paper/unimodal_d20.csv" "U:$paper/unimodal_d50.csv" "M:$paper/multimodal.csv" \
    > "$dir/peers.log" 2>&1
fact load_between "$(load)"

"$root/bench/speed_table" --vbn "$vbn" --repeat "${WINDOW_REPEAT:-20}" \
    --examples unimodal_d1,unimodal_d5,unimodal_d10,unimodal_d20,unimodal_d50,multimodal,bimodal \
    --methods "${WINDOW_METHODS:-auto,varblock,regen,varmix,nuts}" --out "$dir/vbn.tsv"
fact load_after "$(load)"
fact finished "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "$dir"
