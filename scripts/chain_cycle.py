#!/usr/bin/env python3
"""Polling figures of a DGT bus chain served by eboardd, measured from its captures.

Runs `eboardd simulate --driver dgt-bus --count N` (one emulated chain of N boards on one pty,
the players and the line at real pace) and `eboardd run --port dgt-bus:PTY` against it for a
while, then reads the capture directory the daemon wrote and prints, for the chain:

- the polling cycle: the time between two turns of the same board (p50, p95, max), a turn
  beginning with SEND_CHANGES, or with REPEAT_CHANGES when the board's last packet of changes
  did not come through whole (a noisy line) —
  a change made on a board waits at most one cycle for its SEND_CHANGES, so the move→event
  latency is the cycle's wait plus the reply's bytes;
- the floor of a cycle: what the bytes of every command and reply of that cycle need at 9600
  baud 8N1 (1.0417 ms a byte) plus the boards' reply times in that cycle (from each command
  to its reply's first byte, as measured in the captures); the ratio of the measured cycle to
  it (what is left is the session's own idle time: timeouts, the rediscovery's listening);
- the line use: bytes on the line (both ways) per second against the line's 960 bytes/s.

Usage: scripts/chain_cycle.py [--boards 3,6,12] [--seconds 40] [--bin target/release/eboardd]
       scripts/chain_cycle.py --captures DIR   (the figures of captures already written, e.g.
       by `E2E_CHAIN_KEEP=1 cargo test --test e2e_chain`, which prints where it kept them)
"""

import argparse
import datetime
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
REPEAT_CHANGES = 0x84
EXTRA = ["--no-fsync"] if os.environ.get("NO_FSYNC") else []


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def measure(bin_path, boards, seconds):
    with tempfile.TemporaryDirectory(prefix="eboardd-chain-") as tmp:
        caps = pathlib.Path(tmp) / "captures"
        run(bin_path, boards, seconds, caps)
        return figures(caps, boards)


def run(bin_path, boards, seconds, caps):
    link = caps.parent / "chain"
    # The chain in one process, the daemon in another, as at a tournament.
    chain = subprocess.Popen(
        [bin_path, "simulate", "--driver", "dgt-bus", "--count", str(boards),
         "--speed", "1", "--link", str(link)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        if link.exists():
            break
        time.sleep(0.1)
    daemon = subprocess.Popen(
        [bin_path, "run", "--port", f"dgt-bus:{link}", "--http", "off", *EXTRA,
         "--capture-dir", str(caps)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        daemon.wait(timeout=seconds)
        print(f"the daemon ended early (exit {daemon.returncode})", file=sys.stderr)
    except subprocess.TimeoutExpired:
        pass
    for proc in (daemon, chain):
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def figures(caps, boards):
    polls = {}
    last_tx = {}
    records = []  # (t, dev, kind, bytes)
    for f in sorted(caps.glob("*/*.jsonl")):
        with open(f) as fh:
            # A record's `t` counts from its file's creation (the header's `created`): on
            # one clock for the whole line.
            created = json.loads(next(fh))["created"]
            base = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
            for line in fh:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                for kind in ("tx", "rx"):
                    if kind in r:
                        b = bytes.fromhex(r[kind])
                        dev = r.get("dev", f.stem)
                        t = base + r["t"]
                        records.append((t, dev, kind, b))
                        if kind == "tx" and b:
                            # A turn begins with its changes: SEND_CHANGES, or REPEAT_CHANGES
                            # after another command (not as a resend within a turn).
                            first = b[0] == SEND_CHANGES or (
                                b[0] == REPEAT_CHANGES
                                and last_tx.get(dev) not in (SEND_CHANGES, REPEAT_CHANGES))
                            if first:
                                polls.setdefault(dev, []).append(t)
                            last_tx[dev] = b[0]
    records.sort(key=lambda x: x[0])
    times = [r[0] for r in records]
    # Reply time: from a command to the first chunk of the next reply on the line, less the
    # command's and that chunk's bytes on the wire (0 for a command no reply followed).
    wait_of = [0.0] * len(records)
    for i, (t, dev, kind, b) in enumerate(records):
        if kind != "tx":
            continue
        for t2, _, k2, b2 in records[i + 1:i + 8]:
            if k2 == "rx":
                # Less the command's own bytes and the first chunk's on the wire.
                wire = (len(b) + len(b2)) * BYTE_MS
                wait_of[i] = max(0.0, (t2 - t) * 1000 - wire)
                break
            if k2 == "tx":
                break
    waits = [w for w, r in zip(wait_of, records) if r[2] == "tx"]
    wait = statistics.mean(waits) if waits else 0.0
    # Only the steady state: from the first poll of the last board found.
    start = max(ts[0] for ts in polls.values()) if polls else 0
    import bisect
    cycles, ratios = [], []
    for ts in polls.values():
        ts = [t for t in sorted(ts) if t >= start]
        for a, b in zip(ts, ts[1:]):
            lo, hi = bisect.bisect_left(times, a), bisect.bisect_left(times, b)
            nbytes = sum(len(r[3]) for r in records[lo:hi])
            floor = nbytes * BYTE_MS + sum(wait_of[lo:hi])
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
    ap.add_argument("--captures", help="read this capture directory instead of running")
    a = ap.parse_args()
    header = (f"{'boards':>6} {'found':>5} {'cycle p50':>10} {'p95':>8} {'max':>8} "
              f"{'reply wait':>10} {'ratio p50':>9} {'p95':>6} {'line use':>9}")
    if a.captures:
        print(header)
        report(figures(pathlib.Path(a.captures), 0))
        return
    if not os.path.exists(a.bin):
        sys.exit(f"{a.bin}: no such binary (cargo build --release first)")
    print(header)
    for n in [int(x) for x in a.boards.split(",")]:
        report(measure(a.bin, n, a.seconds))


def report(m):
    n = m["boards"] or m["found"]
    c = m["cycles"]
    use = m["bytes"] / m["span"] / 960 if m["span"] else float("nan")
    print(f"{n:>6} {m['found']:>5} {pct(c, 50):>8.0f}ms {pct(c, 95):>6.0f}ms "
          f"{max(c, default=float('nan')):>6.0f}ms {m['wait']:>8.1f}ms "
          f"{pct(m['ratios'], 50):>9.2f} {pct(m['ratios'], 95):>6.2f} {use * 100:>8.0f}%")


if __name__ == "__main__":
    main()
