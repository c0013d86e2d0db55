#!/usr/bin/env bash
# Restart time with many finished games kept (issue 22): writes today's capture folder with
# BOARDS boards of GAMES games each (the clean sample captures one after another on every board,
# times shifted), starts `eboardd run` on it (a first start replays every capture and writes each
# board's resume point), kills it with SIGKILL, starts it again and measures, for both starts,
# until health answers, until it says ready (200) and the RSS then; for the restart also until
# the earlier games are read back (health's `earlier_games` gone); and the peak RSS (VmHWM).
# Usage: scripts/restart_time.sh BOARDS GAMES [DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
boards=${1:-50}; games=${2:-40}; dir=${3:-}
made=""; [[ -z $dir ]] && { dir=$(mktemp -d /tmp/eboardd-restart-XXXX); made=1; }
bin=${EBOARDD:-target/release/eboardd}
port=${PORT:-18091}
[[ -x $bin ]] || cargo build --release --quiet --bin eboardd
scripts/event_captures.py "$boards" "$games" "$dir/$(date +%F)" "$(date +%F)"
echo "$boards boards x $games games in $dir ($(du -sh "$dir" | cut -f1))"
start() {  # $1: what this start is
  t0=$(date +%s.%N)
  "$bin" run --capture-dir "$dir" --no-discovery --http "127.0.0.1:$port" >/dev/null 2>>"$dir/log" &
  pid=$!
  first=""
  for _ in $(seq 12000); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/health" || true)
    [[ -z $first && $code != 000 ]] && first=$(date +%s.%N)
    [[ $code == 200 ]] && break
    sleep 0.01
  done
  t1=$(date +%s.%N)
  rss=$(($(awk '/VmRSS/ {print $2}' "/proc/$pid/status") / 1024))
  for _ in $(seq 60000); do
    curl -s "http://127.0.0.1:$port/api/v1/health" | grep -q "\"earlier_games\":{" || break
    sleep 0.01
  done
  t2=$(date +%s.%N)
  peak=$(($(awk '/VmHWM/ {print $2}' "/proc/$pid/status") / 1024))
  printf '%s: health answers after %.2f s, ready after %.2f s (RSS %d MB), earlier games back after %.2f s (peak RSS %d MB)\n' \
    "$1" "$(echo "$first - $t0" | bc)" "$(echo "$t1 - $t0" | bc)" "$rss" "$(echo "$t2 - $t0" | bc)" "$peak"
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
}
start "first start (every capture replayed)"
echo "resume points written: $(find "$dir" -name '*.jsonl.resume' | wc -l)"
start "after kill -9 (from the resume points)"
[[ -n $made ]] && rm -rf "$dir"
