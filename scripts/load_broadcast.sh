#!/usr/bin/env bash
# Load run of the broadcast side: 200 boards replaying sample captures at speed into one
# broadcaster, 1000 WebSocket clients on /api/v1/events; prints published and delivered events
# per second, publish->client latency (p50/p99/max), dropped clients and memory.
# Usage: scripts/load_broadcast.sh [--boards N] [--clients N] [--speed X] [--seconds S]
# Everything runs on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Two sockets per client (both ends in one process) and some headroom.
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cargo build --release --example broadcast_load
exec target/release/examples/broadcast_load "$@"
