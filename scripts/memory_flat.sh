#!/usr/bin/env bash
# Memory over a long event (issue 22): BOARDS emulated DGT boards (pseudo-terminals, clean
# handling, SPEED times real pace) each play GAMES games one after another on one `eboardd run`;
# prints the daemon's RSS as the games started go by, and its RSS when 10 % of them and when all
# of them had started. Usage: scripts/memory_flat.sh [BOARDS] [GAMES] [SPEED]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
boards=${1:-50}; games=${2:-40}; speed=${3:-2000}
bin=${EBOARDD:-target/release/eboardd}
pgn=${PGN:-tests/data/pgn/standard/fide-womens-world-rapid-2024_rounds01-05.pgn}
port=18093
[[ -x $bin ]] || cargo build --release --quiet --bin eboardd
ulimit -n 8192 2>/dev/null || true
dir=$(mktemp -d /tmp/eboardd-memory-XXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
picks=(); for g in $(seq 1 "$games"); do picks+=(--game "$g"); done
"$bin" simulate --pgn "$pgn" "${picks[@]}" --count "$boards" --speed "$speed" --style clean \
  --link "$dir/ports" --exit-when-done >"$dir/sim.log" 2>&1 &
sim=$!
for _ in $(seq 500); do [[ -e $dir/ports/board-$boards ]] && break; sleep 0.02; done
ports=(); for b in $(seq 1 "$boards"); do ports+=(--port "$dir/ports/board-$b"); done
"$bin" run "${ports[@]}" --capture-dir "$dir/cap" --no-discovery --no-fsync \
  --http "127.0.0.1:$port" >/dev/null 2>"$dir/run.log" &
pid=$!
total=$((boards * games)); tenth=$((total / 10)); at_tenth=""; last=-1
rss() { echo $(($(awk '/VmRSS/ {print $2}' "/proc/$pid/status") / 1024)); }
while kill -0 "$sim" 2>/dev/null; do
  sleep 1
  started=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^eboardd_games_total/ {print $2}')
  [[ -z $started ]] && continue
  if [[ -z $at_tenth && $started -ge $tenth ]]; then at_tenth="$(rss) MB at $started games"; fi
  if [[ $((started / 100)) -ne $((last / 100)) ]]; then echo "games started $started: RSS $(rss) MB"; fi
  last=$started
done
sleep 2
started=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^eboardd_games_total/ {print $2}')
echo "RSS ${at_tenth:-?}; $(rss) MB at $started games ($boards boards, $games each)"
warnings=$(grep -c WARN "$dir/run.log" || true)
echo "daemon warnings: $warnings"; grep -m3 WARN "$dir/run.log" || true
