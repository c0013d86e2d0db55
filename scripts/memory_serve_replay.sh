#!/usr/bin/env bash
# Memory of `eboardd serve-replay` against the number of games it replays (issue 40): writes
# BOARDS captures of GAMES games each (the clean sample captures one after another on every
# board, times shifted, as the daemon writes a board's day), replays them with
# `serve-replay --speed 0 --exit` and prints its peak RSS (GNU time's maximum resident set).
# Usage: scripts/memory_serve_replay.sh [BOARDS] [GAMES...]   e.g. 10 15 60 (150 and 600 games)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
boards=${1:-10}; shift || true
counts=("$@"); ((${#counts[@]})) || counts=(15 60)
bin=${EBOARDD:-target/release/eboardd}
port=${PORT:-18094}
[[ -x $bin ]] || cargo build --release --quiet --bin eboardd
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time, Debian package time)"; exit 1; }
tmp=$(mktemp -d /tmp/eboardd-serve-memory-XXXX); trap 'rm -rf "$tmp"' EXIT
for games in "${counts[@]}"; do
  dir=$tmp/$games
  scripts/event_captures.py "$boards" "$games" "$dir" 2026-12-05
  /usr/bin/time -f '%M %e' -o "$tmp/time" "$bin" serve-replay "$dir" --speed 0 --exit \
    --http "127.0.0.1:$port" >/dev/null 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
  read -r kb secs <"$tmp/time"
  events=$(grep -o 'replay done: [0-9]* events' "$tmp/log" | grep -o '[0-9]*' || echo '?')
  printf '%d games (%d boards x %d, %s): peak RSS %d MB, %s events in %.1f s\n' \
    $((boards * games)) "$boards" "$games" "$(du -sh "$dir" | cut -f1)" $((kb / 1024)) "$events" "$secs"
done
