#!/usr/bin/env bash
# The broadcast server under hostile and heavy load (issue 13), as the probes run it: an
# `eboardd serve-replay` process pinned to core 0 (taskset), the clients
# (examples/broadcast_probe.rs) pinned to core 1. Prints the server's RSS before/after each
# probe and its CPU use. Loopback only; everything stops by itself.
# Client probes report "publish -> client": arrival less the hub's publish, stamped from the
# server's own `--events` printer (see `stamps` in examples/broadcast_probe.rs).
# Usage: scripts/probe_broadcast.sh [latency|load|fanout|uploads|slowloris|idle|livechess|all]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what=${1:-all}
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# Two builds: the example needs the dev-dependencies (the crate with its test-only feature), and
# building it together with the binary would re-link target/release/eboardd with that feature,
# so that later checks of the release binary would test another program.
cargo build --release --quiet --bin eboardd
cargo build --release --quiet --example broadcast_probe
probe=target/release/examples/broadcast_probe
# EBOARDD=path/to/eboardd compares another build (e.g. before a change).
bin=${EBOARDD:-target/release/eboardd}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export PUBLISHED=$tmp/published
mapfile -t caps < <(ls tests/data/captures/*/*.jsonl | sort)
port=18080; lc=11982

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }          # KiB
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }              # clock ticks
serve() { # boards speed
  local files=()
  while ((${#files[@]} < $1)); do files+=("${caps[@]}"); done
  : > "$PUBLISHED"
  taskset -c 0 "$bin" serve-replay --boards --speed "$2" --events \
    --http "127.0.0.1:$port" --livechess "127.0.0.1:$lc" --token probe-token-1234 \
    "${files[@]:0:$1}" 2>/dev/null > >(taskset -c 1 "$probe" stamps "$PUBLISHED") &
  server=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/api/v1/health" >/dev/null && break; sleep 0.1; done
}
stop() { kill -INT "$server"; wait "$server" 2>/dev/null || true; }
report() { # label rss0 cpu0 seconds
  local r1 c1; r1=$(rss "$server"); c1=$(cpu "$server")
  printf '  server RSS %d -> %d MB (%+d MB), CPU %.0f%% of one core\n' $(($2 / 1024)) $((r1 / 1024)) \
    $(((r1 - $2) / 1024)) "$(echo "($c1 - $3) * 100 / $(getconf CLK_TCK) / $4" | bc -l)"
}

if [[ $what == latency || $what == all ]]; then
  # Issue 40: publish -> client when the server is not busy (100 boards at real pace) and
  # under the 20x load of the fan-out probe below, with 4 and with 1,000 clients.
  for speed in 1 20; do
    for n in 4 1000; do
      for mode in frames sse; do
        echo "== latency: 100 boards at ${speed}x pace, $n $mode clients, 30 s"
        url="ws://127.0.0.1:$port/api/v1/events"
        [[ $mode == sse ]] && url="http://127.0.0.1:$port/api/v1/events/sse"
        serve 100 "$speed"; r0=$(rss $server); c0=$(cpu $server)
        taskset -c 1 $probe $mode "$url" "$n" 30 "$speed"
        report x "$r0" "$c0" 30; stop
      done
    done
  done
fi
if [[ $what == uploads || $what == all ]]; then
  echo "== 100 stalled unauthenticated 2 MB uploads"
  serve 100 5; r0=$(rss $server); c0=$(cpu $server)
  taskset -c 1 $probe uploads 127.0.0.1:$port 100 15 &
  up=$!; sleep 14; report x "$r0" "$c0" 14; wait $up; stop
fi
if [[ $what == slowloris || $what == all ]]; then
  echo "== 500 slowloris connections, 40 s"
  serve 100 5; r0=$(rss $server); c0=$(cpu $server)
  taskset -c 1 $probe slowloris 127.0.0.1:$port 500 40; report x "$r0" "$c0" 40; stop
fi
if [[ $what == idle || $what == all ]]; then
  echo "== 1000 idle WebSocket clients on a 100-board round"
  serve 100 5; sleep 5; r0=$(rss $server); c0=$(cpu $server)
  taskset -c 1 $probe idle "ws://127.0.0.1:$port/api/v1/events" 1000 20 &
  cl=$!; sleep 15; r1=$(rss $server)
  echo "  per client: $(((r1 - r0) / 1000)) KB"; wait $cl; report x "$r0" "$c0" 20; stop
fi
if [[ $what == livechess || $what == all ]]; then
  echo "== event lag while 3 LiveChess connections hold 1000 feeds each (100 boards, 5x)"
  serve 100 5; r0=$(rss $server); c0=$(cpu $server)
  taskset -c 1 $probe livechess "ws://127.0.0.1:$lc/api/v1.0" 3 1000 30 &
  lcp=$!
  taskset -c 1 $probe ws "ws://127.0.0.1:$port/api/v1/events" 20 30 5
  wait $lcp; report x "$r0" "$c0" 30; stop
fi
if [[ $what == fanout || $what == all ]]; then
  # Issue 22: 1,000 clients on 200 boards at 20x pace. `frames` and `sse` clients read the
  # socket without a WebSocket library (the `ws` clients of the load probe saturate their core,
  # and the lag they see is their own queue); `ws` is there for comparison.
  for mode in frames sse ws; do
    echo "== fan-out: 200 boards at 20x pace, 1000 $mode clients, 40 s"
    url="ws://127.0.0.1:$port/api/v1/events"
    [[ $mode == sse ]] && url="http://127.0.0.1:$port/api/v1/events/sse"
    serve 200 20; sleep 2; r0=$(rss $server); c0=$(cpu $server)
    taskset -c 1 $probe $mode "$url" 1000 40 20 &
    cl=$!; sleep 20; r1=$(rss $server)
    echo "  server RSS with the clients connected: +$(((r1 - r0) / 1000)) KB per client"
    wait $cl; report x "$r0" "$c0" 40; stop
  done
fi
if [[ $what == load || $what == all ]]; then
  echo "== load: 200 boards at 5x pace, 1000 WebSocket clients, 40 s"
  serve 200 5; r0=$(rss $server); c0=$(cpu $server)
  taskset -c 1 $probe ws "ws://127.0.0.1:$port/api/v1/events" 1000 40 5
  report x "$r0" "$c0" 40; stop
fi
