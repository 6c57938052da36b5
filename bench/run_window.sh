#!/bin/sh
# One benchmark window: Stan and JAGS (bench/peers/run_peers.R), then `vbn fit`
# (bench/speed_table), side by side on this machine, with the machine's facts, into
# bench/results/windows/<UTC date-time>/; then the same for the hidden-variable corpus
# (bench/peers/run_corpus.R, speed_table --corpus):
#
#   machine.tsv   commit, CPU, nproc, load average before / between / after, R, rstan, Stan,
#                 JAGS and vbn versions
#   peers.tsv     run_peers.R's rows (and peers.log, its output: compile times, R start-up)
#   vbn.tsv       speed_table's rows, one per run
#   corpus_peers.tsv, corpus_peers.log, corpus_vbn.tsv   the same for the corpus
#
#   bench/run_window.sh [VBN]        # VBN defaults to build/tools/vbn/vbn
#
# WINDOW_REPEAT (default 20) runs of each vbn method; WINDOW_METHODS (default
# auto,varblock,regen,varmix,nuts); PEERS_SEEDS and PEERS_JAGS_SEEDS: see run_peers.R.
# The corpus: WINDOW_CORPUS (the models, MODEL:K for at most K runs of each; default
# diagnosis,survey,occupancy,housevotes,sbn_3x8,sbn2:1, as sbn2's runs take minutes; empty to
# skip), CORPUS_REPEAT (default 20) runs of each of CORPUS_METHODS (default auto,varmh: varmh
# proposes all weights from one split t, the fastest kernel where it does not stick, beside
# what auto picks), CORPUS_STAN_SEEDS (default 20, as the
# errors over seeds need) and CORPUS_JAGS_SEEDS (default 5). WINDOW_EXAMPLES=0
# skips the paper's examples.
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
# A window compares vbn with both peers: without rjags the peers' scripts would run Stan alone
# and the window's tables would lack JAGS, so it stops here unless that is asked for.
if [ -z "${PEERS_SKIP_JAGS:-}" ] && ! Rscript -e 'suppressMessages(library(rjags))' > /dev/null 2>&1; then
  echo "run_window.sh: R cannot load rjags, so JAGS would be left out of the window; install it" \
       "(apt-get install jags r-cran-rjags) or set PEERS_SKIP_JAGS=1 to run Stan alone" >&2
  rm -r "$dir"
  exit 1
fi
fact commit "$(git -C "$root" describe --always --dirty --abbrev=12)"
fact cpu "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
fact nproc "$(nproc)"
fact vbn "$("$vbn" --version 2>&1 | head -1)"
fact R "$(Rscript -e 'cat(R.version.string)' 2>/dev/null)"
fact rstan "$(Rscript -e 'suppressMessages(library(rstan)); cat(as.character(packageVersion("rstan")), "Stan", stan_version())' 2>/dev/null)"
fact jags "$(Rscript -e 'suppressMessages(library(rjags)); cat(as.character(packageVersion("rjags")), "JAGS", as.character(jags.version()))' 2>/dev/null)"
corpus=${WINDOW_CORPUS-diagnosis,survey,occupancy,housevotes,sbn_3x8,sbn2:1}
fact settings "WINDOW_REPEAT=${WINDOW_REPEAT:-20} PEERS_SEEDS=${PEERS_SEEDS:-20} PEERS_JAGS_SEEDS=${PEERS_JAGS_SEEDS:-5} WINDOW_METHODS=${WINDOW_METHODS:-auto,varblock,regen,varmix,nuts} WINDOW_EXAMPLES=${WINDOW_EXAMPLES:-1} WINDOW_CORPUS=$corpus CORPUS_METHODS=${CORPUS_METHODS:-auto,varmh} CORPUS_REPEAT=${CORPUS_REPEAT:-20} CORPUS_STAN_SEEDS=${CORPUS_STAN_SEEDS:-20} CORPUS_JAGS_SEEDS=${CORPUS_JAGS_SEEDS:-5}"
fact load_before "$(load)"

paper=examples/paper
if [ "${WINDOW_EXAMPLES:-1}" != 0 ]; then
Rscript "$root/bench/peers/run_peers.R" "$dir/peers.tsv" \
    "U:$paper/unimodal_d1.csv" "U:$paper/unimodal_d5.csv" "U:$paper/unimodal_d10.csv" \
    "U:$paper/unimodal_d20.csv" "U:$paper/unimodal_d50.csv" "M:$paper/multimodal.csv" \
    > "$dir/peers.log" 2>&1
fact load_between "$(load)"

"$root/bench/speed_table" --vbn "$vbn" --repeat "${WINDOW_REPEAT:-20}" \
    --examples unimodal_d1,unimodal_d5,unimodal_d10,unimodal_d20,unimodal_d50,multimodal,bimodal \
    --methods "${WINDOW_METHODS:-auto,varblock,regen,varmix,nuts}" --out "$dir/vbn.tsv"
fi
if [ -n "$corpus" ]; then
  fact load_corpus "$(load)"
  # shellcheck disable=SC2086
  PEERS_SEEDS=${CORPUS_STAN_SEEDS:-20} PEERS_JAGS_SEEDS=${CORPUS_JAGS_SEEDS:-5} \
    Rscript "$root/bench/peers/run_corpus.R" "$dir/corpus_peers.tsv" $(echo "$corpus" | tr , ' ') \
    > "$dir/corpus_peers.log" 2>&1
  fact load_corpus_between "$(load)"
  "$root/bench/speed_table" --vbn "$vbn" --examples "" --corpus "$corpus" --corpus-methods "${CORPUS_METHODS:-auto,varmh}" \
      --corpus-repeat "${CORPUS_REPEAT:-20}" --out "$dir/corpus_vbn.tsv"
fi
fact load_after "$(load)"
fact finished "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "$dir"
