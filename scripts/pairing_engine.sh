#!/usr/bin/env bash
# Runs the real pairing engine (bbpPairings, Dutch system) on the files of
# tests/data/trf/bbp again and fails on any difference from what is recorded there.
#
#   scripts/pairing_engine.sh BBP            # BBP: the bbpPairings executable
#   scripts/pairing_engine.sh --build SRC    # build it first from its source tree SRC (make; g++)
#
# With EBOARDD_BBP set to the executable, tests/e2e_pairing_engine.rs also runs the engine on
# the TRF eboardd writes (this script prints the line to do so).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/tests/data/trf/bbp"
if [[ "${1:-}" == "--build" ]]; then
    src=${2:?usage: $0 --build SRC}
    out=$(mktemp -d)
    cp -r "$src"/. "$out"
    make -C "$out" -j2 >/dev/null
    bbp="$out/bbpPairings.exe"
else
    bbp=${1:?usage: $0 BBP | --build SRC}
fi
[[ -x "$bbp" ]] || { echo "pairing_engine: $bbp is not an executable" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Round 1 as the engine pairs it from the start.
"$bbp" --dutch "$data/start.trf" -p "$work/round1.txt"
diff -u "$data/round1.txt" "$work/round1.txt"
# Round 1 played: the engine finds nothing wrong with it and pairs round 2.
"$bbp" --dutch "$data/round1-results.trf" -c >"$work/check.txt"
# (-c exits 0 either way: a pairing other than the engine's own is listed under this header)
if grep -q "Checker pairings" "$work/check.txt"; then cat "$work/check.txt" >&2; exit 1; fi
"$bbp" --dutch "$data/round1-results.trf" -p "$work/round2.txt"
diff -u "$data/round2.txt" "$work/round2.txt"
echo "pairing_engine: the recorded engine output is what $bbp writes"
echo "to run the e2e test against it: EBOARDD_BBP=$bbp cargo test --test e2e_pairing_engine"
