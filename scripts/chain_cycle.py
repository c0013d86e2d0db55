#!/usr/bin/env python3
"""Polling figures of a DGT bus chain served by eboardd, measured from its captures.

Runs `eboardd demo --boards dgt-bus:N` (one emulated chain of N boards on one pty, the players
and the line at real pace) for a while, then reads the capture directory it wrote and prints,
for the chain:

- the polling cycle: the time between two SEND_CHANGES to the same board (p50, p95, max) —
  a change made on a board waits at most one cycle for its SEND_CHANGES, so the move→event
  latency is the cycle's wait plus the reply's bytes;
- the floor of a cycle: what the bytes of every command and reply of that cycle need at 9600
  baud 8N1 (1.0417 ms a byte) plus the boards' reply times (from a command to its reply's
  first byte, as measured in the captures); the ratio of the measured cycle to it (what is
  left is the session's own idle time);
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
        records = []  # (t, dev, kind, bytes)
        for f in sorted(caps.glob("*/*.jsonl")):
            with open(f) as fh:
                next(fh)  # header
                for line in fh:
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    for kind in ("tx", "rx"):
                        if kind in r:
                            b = bytes.fromhex(r[kind])
                            dev = r.get("dev", f.stem)
                            records.append((r["t"], dev, kind, b))
                            if kind == "tx" and b and b[0] == SEND_CHANGES:
                                polls.setdefault(dev, []).append(r["t"])
        records.sort(key=lambda x: x[0])
        times = [r[0] for r in records]
        # Reply time: from a command to the first byte of the next reply on the line, less
        # that byte's own time on the wire.
        reply_wait = []
        for i, (t, dev, kind, b) in enumerate(records):
            if kind != "tx":
                continue
            for t2, _, k2, _ in records[i + 1:i + 8]:
                if k2 == "rx":
                    reply_wait.append(max(0.0, (t2 - t) * 1000 - BYTE_MS))
                    break
                if k2 == "tx":
                    break
        wait = statistics.mean(reply_wait) if reply_wait else 0.0
        # Only the steady state: from the first poll of the last board found.
        start = max(ts[0] for ts in polls.values()) if polls else 0
        import bisect
        cycles, ratios = [], []
        for ts in polls.values():
            ts = [t for t in sorted(ts) if t >= start]
            for a, b in zip(ts, ts[1:]):
                lo, hi = bisect.bisect_left(times, a), bisect.bisect_left(times, b)
                window = records[lo:hi]
                nbytes = sum(len(r[3]) for r in window)
                ncmds = sum(1 for r in window if r[2] == "tx")
                floor = nbytes * BYTE_MS + ncmds * wait
                cycles.append((b - a) * 1000)
                ratios.append((b - a) * 1000 / floor if floor else float("nan"))
        span = (times[-1] - times[0]) if times else 0
        total = sum(len(r[3]) for r in records)
        return {
            "boards": boards,
            "found": len(polls),
            "cycles": cycles,
            "ratios": ratios,
            "wait": wait,
            "bytes": total,
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
    print(f"{'boards':>6} {'found':>5} {'cycle p50':>10} {'p95':>8} {'max':>8} "
          f"{'reply wait':>10} {'ratio p50':>9} {'p95':>6} {'line use':>9}")
    for n in [int(x) for x in a.boards.split(",")]:
        m = measure(a.bin, n, a.seconds)
        c = m["cycles"]
        use = m["bytes"] / m["span"] / 960 if m["span"] else float("nan")
        print(f"{n:>6} {m['found']:>5} {pct(c, 50):>8.0f}ms {pct(c, 95):>6.0f}ms "
              f"{max(c, default=float('nan')):>6.0f}ms {m['wait']:>8.1f}ms "
              f"{pct(m['ratios'], 50):>9.2f} {pct(m['ratios'], 95):>6.2f} {use * 100:>8.0f}%")


if __name__ == "__main__":
    main()
