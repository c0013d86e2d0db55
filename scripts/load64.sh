#!/usr/bin/env bash
# Load run of the daemon: 64 emulated DGT boards (pseudo-terminals) on one `eboardd run`, each
# playing a whole real game at accelerated pace. Checks that every game comes out exact (event
# stream and replay of the captures) and prints the daemon's CPU time and memory.
# Usage: scripts/load64.sh            (LOAD_BOARDS=64 LOAD_SPEED=200 LOAD_FSYNC=1 by default)
#        LOAD_SPEED=500 LOAD_FSYNC=0 scripts/load64.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# 64 ptys in the test process plus the daemon's ends, with headroom.
ulimit -n 4096 2>/dev/null || true
exec cargo test --release --test e2e_load64 -- --ignored --nocapture
