#!/usr/bin/env python3
"""Polling figures of a DGT bus chain served by eboardd, measured from its captures.

Runs `eboardd demo --boards dgt-bus:N` (one emulated chain of N boards on one pty, the players
and the line at real pace) for a while, then reads the capture directory it wrote and prints,
for the chain:

- the polling cycle: the time between two SEND_CHANGES to the same board (p50, p95, max) —
  a change made on a board waits at most one cycle for its SEND_CHANGES, so the move→event
  latency is the cycle's wait plus the reply's bytes;
- the byte floor of a cycle: what the bytes of every command and reply of one cycle need at
  9600 baud 8N1 (1.0417 ms a byte), without the boards' reply delays; the ratio of the
  measured cycle to it;
- the line use: bytes on the line (both ways) per second against the line's 960 bytes/s.

Usage: scripts/chain_cycle.py [--boards 3,6,12] [--seconds 40] [--bin target/release/eboardd]
"""

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BYTE_MS = 10 / 9600 * 1000  # one byte at 9600 baud 8N1
SEND_CHANGES = 0x83


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def measure(bin_path, boards, seconds):
    with tempfile.TemporaryDirectory(prefix="eboardd-chain-") as tmp:
        caps = pathlib.Path(tmp) / "captures"
        proc = subprocess.Popen(
            [bin_path, "demo", "--boards", f"dgt-bus:{boards}", "--speed", "1",
             "--http", "off", "--capture-dir", str(caps)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            proc.wait(timeout=seconds)
            print(f"demo ended early (exit {proc.returncode})", file=sys.stderr)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        polls = {}
        sent = 0
        received = 0
        first = None
        last = None
        for f in sorted(caps.glob("*/*.jsonl")):
            with open(f) as fh:
                next(fh)  # header
                for line in fh:
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    t = r.get("t")
                    if "tx" in r:
                        b = bytes.fromhex(r["tx"])
                        sent += len(b)
                        if b and b[0] == SEND_CHANGES:
                            polls.setdefault(r.get("dev", f.stem), []).append(t)
                    elif "rx" in r:
                        received += len(r["rx"]) // 2
                    else:
                        continue
                    first = t if first is None else min(first, t)
                    last = t if last is None else max(last, t)
        # Only the steady state: from the first poll of the last board found.
        start = max(ts[0] for ts in polls.values()) if polls else 0
        cycles = []
        for ts in polls.values():
            ts = [t for t in sorted(ts) if t >= start]
            cycles += [(b - a) * 1000 for a, b in zip(ts, ts[1:])]
        span = (last - first) if first is not None else 0
        return {
            "boards": boards,
            "found": len(polls),
            "cycles": cycles,
            "bytes": sent + received,
            "span": span,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boards", default="3,6,12")
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--bin", default="target/release/eboardd")
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        sys.exit(f"{a.bin}: no such binary (cargo build --release first)")
    # A board's turn at steady state: SEND_CHANGES (4) + its reply (6, no change) and SEND_CLK
    # (4) + BWTIME (13) for the boards with a clock: the floor of a cycle with nothing moving.
    per_board_floor = (4 + 6 + 4 + 13) * BYTE_MS
    print(f"{'boards':>6} {'found':>5} {'cycle p50':>10} {'p95':>8} {'max':>8} "
          f"{'floor':>7} {'ratio':>6} {'line use':>9}")
    for n in [int(x) for x in a.boards.split(",")]:
        m = measure(a.bin, n, a.seconds)
        c = m["cycles"]
        floor = per_board_floor * n
        use = m["bytes"] / m["span"] / 960 if m["span"] else float("nan")
        p50 = pct(c, 50)
        print(f"{n:>6} {m['found']:>5} {p50:>8.0f}ms {pct(c, 95):>6.0f}ms {max(c, default=float('nan')):>6.0f}ms "
              f"{floor:>5.0f}ms {p50 / floor:>6.2f} {use * 100:>8.0f}%")


if __name__ == "__main__":
    main()
