#!/usr/bin/env python3
"""Writes the captures of a long event, as the daemon writes a board's day: BOARDS files
(`board-N.jsonl`) in DIR, each board playing GAMES of the clean sample captures one after
another (times shifted, 30 s between games), created at DAY 08:00 UTC.
Usage: scripts/event_captures.py BOARDS GAMES DIR DAY   (DAY as 2026-12-05)"""
import glob, json, os, sys

boards, games, out, day = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
caps = [[json.loads(l) for l in open(c).read().splitlines()[1:]]
        for c in sorted(glob.glob(f'{root}/tests/data/captures/clean/*.jsonl'))]
os.makedirs(out, exist_ok=True)
k = 0
for b in range(1, boards + 1):
    dev = f'board-{b}'
    with open(f'{out}/{dev}.jsonl', 'w') as f:
        f.write(json.dumps({"format": "eboard-capture", "version": 1,
                            "created": f"{day}T08:00:00Z", "board": dev}) + "\n")
        off = 0.0
        for _ in range(games):
            recs = caps[k % len(caps)]; k += 1
            for r in recs:
                f.write(json.dumps(dict(r, t=round(r['t'] + off, 6), dev=dev)) + "\n")
            off += recs[-1]['t'] + 30.0
