#!/usr/bin/env python3
"""A tournament soak (issue 22, part 6): a compressed Swiss event on one `eboardd run`.

BOARDS emulated DGT boards with clocks (`eboardd simulate`, pseudo-terminals, human handling,
SPEED times real pace) play ROUNDS rounds. Every round is paired from a FIDE TRF file written
here (players by score, the results of the rounds before in it) and loaded over the API, as an
arbiter loads it; the boards are the configured boards 1..BOARDS (by serial). During every
round the daemon is killed with SIGKILL and started again; between rounds the boards' cables
are pulled (the emulators end, their ports go away and come back for the next round) and every
other round the daemon is killed again. Every round is loaded twice, first with a mistake (the
colours of one pairing swapped), then corrected. After each round the arbiter enters every
result over the API.

At the end it checks, for every game of every round: the moves and the result in the replay of
the capture directory (`eboardd replay`), in the API (`/api/v1/rounds/R/games.pgn`, with the
players the TRF gave the board) and in the relay files (`round-R/games.pgn`), both at the end of
the round and again after the last round (earlier rounds after restarts); and it prints
the daemon's RSS after every round and every restart's time until it was ready. Exit 1 when
anything is lost or differs.

Usage: scripts/soak.py [--boards 200] [--rounds 9] [--speed 300] [--keep DIR]
Needs python-chess (`pip install chess`) and a release build (built when missing).
"""

import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import chess.pgn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "soak-token-0123456789"
CORPUS = [
    "tests/data/pgn/standard/pychess_world_matches.pgn",
    "tests/data/pgn/standard/pychess_dortmund.pgn",
    "tests/data/pgn/standard/fide-womens-world-rapid-2024_rounds01-05.pgn",
]


def log(*a):
    print(*a, flush=True)


def games_of(text):
    """(headers, SAN moves, result) of every game of a PGN text."""
    out = []
    f = io.StringIO(text)
    while True:
        g = chess.pgn.read_game(f)
        if g is None:
            return out
        board = g.board()
        sans = []
        for m in g.mainline_moves():
            sans.append(board.san(m))
            board.push(m)
        out.append((g.headers, sans, g.headers.get("Result", "*"), g))


def drawn_by_rule(game):
    """Whether the game reaches a position the Laws end by themselves before its last move
    (fivefold repetition, 75 moves, a dead position: 9.6, 5.2.2): old games played on there,
    eboardd ends them as drawn (and records the moves played after), so their PGN result is not
    the truth of a soak."""
    board = game.board()
    for m in game.mainline_moves():
        board.push(m)
        if board.is_fivefold_repetition() or board.is_seventyfive_moves() or board.is_insufficient_material():
            return not board.is_checkmate()
    return False


def corpus():
    """Standard games from the start position, 20 to 160 plies, decisive or drawn."""
    picked = []
    for path in CORPUS:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            for headers, sans, result, g in games_of(f.read()):
                if "FEN" in headers or result not in ("1-0", "0-1", "1/2-1/2"):
                    continue
                if 20 <= len(sans) <= 160 and not drawn_by_rule(g):
                    picked.append((sans, result, g))
    return picked


class Http:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path, timeout=10):
        try:
            with urllib.request.urlopen(self.base + path, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return 0, ""

    def post(self, path, body, content_type="application/json"):
        req = urllib.request.Request(
            self.base + path,
            data=body.encode(),
            method="POST",
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


def trf(players, rounds):
    """A TRF-16 file: `players` [(name, rating)], `rounds` [[(white, black, result)]] with
    start ranks from 1 and results "1-0"/"0-1"/"1/2-1/2" or None (not played yet)."""
    cells = {p: [] for p in range(1, len(players) + 1)}
    points = {p: 0 for p in cells}
    for pairs in rounds:
        for w, b, res in pairs:
            rw, rb = {"1-0": ("1", "0"), "0-1": ("0", "1"), "1/2-1/2": ("=", "=")}.get(res, (" ", " "))
            cells[w].append(f"{b:4d} w {rw}")
            cells[b].append(f"{w:4d} b {rb}")
            points[w] += {"1": 2, "=": 1}.get(rw, 0)
            points[b] += {"1": 2, "=": 1}.get(rb, 0)
    lines = ["012 eboardd soak open", "022 Soak City"]
    for p, (name, rating) in enumerate(players, 1):
        line = f"001 {p:4d} m    {name:<33} {rating:4d} GER {10000000 + p:11d} 2000/01/01 {points[p] / 2:4.1f} {p:4d}"
        for c in cells[p]:
            line += "  " + c
        lines.append(line)
    return "\n".join(lines) + "\n"


def pair(nplayers, scores, round_no):
    """Pairs for a round: players by score then start rank, 1-2, 3-4, ...; colours alternate."""
    order = sorted(range(1, nplayers + 1), key=lambda p: (-scores[p], p))
    pairs = []
    for i in range(0, nplayers, 2):
        a, b = order[i], order[i + 1]
        pairs.append((a, b) if (i // 2 + round_no) % 2 == 0 else (b, a))
    # Board order as pairing programs give it (docs/broadcast.md, section 10).
    pairs.sort(key=lambda wb: (-max(scores[wb[0]], scores[wb[1]]), -(scores[wb[0]] + scores[wb[1]]), min(wb)))
    return pairs


class Daemon:
    def __init__(self, binary, work, ports, port):
        self.binary, self.work, self.ports, self.http = binary, work, ports, Http(port)
        self.port = port
        self.proc = None
        self.starts = []
        self.no_resume = False

    def start(self, why):
        if self.no_resume:
            for day, _, files in os.walk(os.path.join(self.work, "captures")):
                for f in files:
                    if f.endswith(".resume"):
                        os.remove(os.path.join(day, f))
        t0 = time.monotonic()
        args = [self.binary, "run", "--config", os.path.join(self.work, "soak.toml"), "--no-discovery",
                "--no-fsync", "--capture-dir", os.path.join(self.work, "captures"),
                "--relay-dir", os.path.join(self.work, "relay"), "--http", f"127.0.0.1:{self.port}",
                "--token", TOKEN]
        for p in self.ports:
            args += ["--port", p]
        err = open(os.path.join(self.work, "daemon.log"), "a")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        while True:
            code, _ = self.http.get("/api/v1/health", timeout=2)
            if code == 200:
                break
            if self.proc.poll() is not None:
                sys.exit(f"soak: the daemon exited ({self.proc.returncode}); see {err.name}")
            time.sleep(0.01)
        took = time.monotonic() - t0
        self.starts.append((why, took))
        return took

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) // 1024
        return 0

    def moves_total(self):
        _, text = self.http.get("/metrics")
        for line in text.splitlines():
            if line.startswith("eboardd_moves_total"):
                return float(line.split()[-1])
        return 0.0


def check(label, text, expected, names=None):
    """Compares the games of a PGN text with `expected` {(round, board): (sans, result)};
    returns the problems."""
    problems = []
    got = {}
    for headers, sans, result, _ in games_of(text):
        rb = headers.get("Round", "")
        if "." not in rb:
            continue
        r, b = rb.split(".", 1)
        got.setdefault((int(r), int(b)), []).append((sans, result, headers.get("White"), headers.get("Black")))
    for key, (sans, result) in sorted(expected.items()):
        have = got.get(key, [])
        if len(have) != 1:
            problems.append(f"{label}: round {key[0]} board {key[1]}: {len(have)} games")
            continue
        hs, hr, white, black = have[0]
        if hs != sans:
            first = next((i for i, (a, b) in enumerate(zip(hs, sans)) if a != b), min(len(hs), len(sans)))
            problems.append(f"{label}: round {key[0]} board {key[1]}: moves differ at ply {first + 1} "
                            f"({len(hs)} plies, want {len(sans)})")
        if hr != result:
            problems.append(f"{label}: round {key[0]} board {key[1]}: result {hr}, want {result}")
        if names and (white, black) != names[key]:
            problems.append(f"{label}: round {key[0]} board {key[1]}: players {white} - {black}, want {names[key]}")
    extra = set(got) - set(expected)
    if extra:
        problems.append(f"{label}: {len(extra)} games not played, e.g. {sorted(extra)[:3]}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--speed", type=float, default=300)
    ap.add_argument("--keep", help="work in this directory and keep it")
    ap.add_argument("--http-port", type=int, default=18097)
    ap.add_argument("--no-resume-points", action="store_true",
                    help="delete the boards' resume points before every restart (every capture replayed whole)")
    a = ap.parse_args()
    binary = os.environ.get("EBOARDD", os.path.join(ROOT, "target/release/eboardd"))
    if not os.access(binary, os.X_OK):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "eboardd"], cwd=ROOT, check=True)
    work = a.keep or tempfile.mkdtemp(prefix="eboardd-soak-")
    os.makedirs(work, exist_ok=True)
    games = corpus()
    need = a.boards * a.rounds
    log(f"soak: {a.boards} boards x {a.rounds} rounds at {a.speed}x, {len(games)} corpus games, in {work}")
    nplayers = 2 * a.boards
    players = [(f"Player{p:04d},Soak", 2800 - p) for p in range(1, nplayers + 1)]
    with open(os.path.join(work, "soak.toml"), "w") as f:
        f.write('[event]\nname = "eboardd soak open"\n')
        for n in range(1, a.boards + 1):
            f.write(f'\n[[board]]\nnumber = {n}\nserial = "{20000 + n}"\n')
    ports_dir = os.path.join(work, "ports")
    ports = [os.path.join(ports_dir, f"board-{n}") for n in range(1, a.boards + 1)]
    d = Daemon(binary, work, ports, a.http_port)
    d.no_resume = a.no_resume_points
    d.start("first start")
    scores = {p: 0 for p in range(1, nplayers + 1)}
    played = []  # per round: [(white, black, result)]
    expected, names = {}, {}
    rss = []
    kills = 0
    unknown_total = 0
    problems = []
    for r in range(1, a.rounds + 1):
        pairs = pair(nplayers, scores, r)
        chosen = [games[((r - 1) * a.boards + i) % len(games)] for i in range(a.boards)]
        text = trf(players, played + [[(w, b, None) for (w, b) in pairs]])
        with open(os.path.join(work, f"round{r}.trf"), "w") as f:
            f.write(text)
        # A correction, as arbiters make them: the round is first loaded with the colours of
        # the first pairing swapped, then again as it is (the checks below want the second).
        wrong = trf(players, played + [[(b, w, None) if i == 0 else (w, b, None) for i, (w, b) in enumerate(pairs)]])
        for body_text in (wrong, text):
            code, body = d.http.post(f"/api/v1/round?round={r}&format=trf", body_text, "text/plain")
            if code != 200:
                sys.exit(f"soak: round {r} not loaded: {code} {body}")
        pgn = os.path.join(work, f"round{r}.pgn")
        with open(pgn, "w") as f:
            for sans, result, g in chosen:
                print(g, file=f, end="\n\n")
        for n, ((w, b), (sans, result, _)) in enumerate(zip(pairs, chosen), 1):
            expected[(r, n)] = (sans, result)
            names[(r, n)] = (players[w - 1][0].replace(",", ", "), players[b - 1][0].replace(",", ", "))
        plies = sum(len(s) for s, _, _ in chosen)
        before = d.moves_total()
        sim = subprocess.Popen([binary, "simulate", "--pgn", pgn, "--count", str(a.boards), "--games-per-board", "1", "--speed",
                                str(a.speed), "--style", "human", "--seed", str(r), "--serial", "20001",
                                "--link", ports_dir, "--exit-when-done"],
                               stdout=open(os.path.join(work, f"sim-round{r}.out"), "w"),
                               stderr=open(os.path.join(work, "sim.log"), "a"))
        # Killed in the middle of the round: when about a third of its moves are made.
        while d.moves_total() - before < plies / 3 and sim.poll() is None:
            time.sleep(0.2)
        d.kill9()
        kills += 1
        d.start(f"round {r}, during")
        sim.wait()
        if sim.returncode != 0:
            sys.exit(f"soak: the emulated boards failed in round {r} ({sim.returncode}); see sim.log")
        # The emulators are strict: every host byte they did not take is a daemon fault.
        with open(os.path.join(work, f"sim-round{r}.out")) as f:
            stopped = [line for line in f if line.startswith("emulators stopped:")]
        not_taken = int(stopped[-1].split()[2]) if stopped else None
        if not_taken != 0:
            problems.append(f"emulators: round {r}: host bytes not taken: "
                            f"{not_taken if stopped else 'no count printed'} (see sim-round{r}.out)")
        unknown_total += not_taken or 0
        # Every move in, then the arbiter enters the results.
        deadline = time.monotonic() + 20
        while True:
            _, text = d.http.get(f"/api/v1/rounds/{r}/games.pgn")
            have = {int(h["Round"].split(".")[1]): len(s) for h, s, _, _ in games_of(text) if "." in h.get("Round", "")}
            if all(have.get(n) == len(expected[(r, n)][0]) for n in range(1, a.boards + 1)):
                break
            if time.monotonic() > deadline:
                short = [n for n in range(1, a.boards + 1) if have.get(n) != len(expected[(r, n)][0])]
                log(f"soak: round {r}: {len(short)} boards never got all their moves, e.g. {short[:5]}")
                break
            time.sleep(0.5)
        for n in range(1, a.boards + 1):
            code, body = d.http.post(f"/api/v1/boards/board-{n}/result", json.dumps({"result": expected[(r, n)][1]}))
            # 409: the game ended by itself (mate, stalemate); its result is checked below.
            if code not in (200, 409):
                log(f"soak: round {r} board {n}: result not entered: {code} {body}")
        round_results = []
        for (w, b), (_, result, _) in zip(pairs, chosen):
            round_results.append((w, b, result))
            scores[w] += {"1-0": 2, "1/2-1/2": 1}.get(result, 0)
            scores[b] += {"0-1": 2, "1/2-1/2": 1}.get(result, 0)
        played.append(round_results)
        # The round as the broadcast shows it at its end (results in).
        time.sleep(1)  # relay files are coalesced (300 ms)
        want = {k: v for k, v in expected.items() if k[0] == r}
        _, text = d.http.get(f"/api/v1/rounds/{r}/games.pgn")
        problems += check(f"API at the end of round {r}", text, want, names)
        relay = os.path.join(work, "relay", f"round-{r}", "games.pgn")
        problems += check(f"relay at the end of round {r}", open(relay).read() if os.path.exists(relay) else "", want)
        rss.append(d.rss_mb())
        log(f"round {r}: {a.boards} games, {plies} plies; RSS {rss[-1]} MB; restarts so far: "
            + ", ".join(f"{t:.2f} s" for _, t in d.starts[1:]))
        if r % 2 == 0 and r < a.rounds:
            d.kill9()
            kills += 1
            d.start(f"after round {r}")
    out = subprocess.run([binary, "replay", os.path.join(work, "captures")], capture_output=True, text=True)
    if out.returncode != 0:
        problems.append(f"replay failed: {out.stderr.strip()}")
    problems += check("replay", out.stdout, expected)
    for r in range(1, a.rounds + 1):
        want = {k: v for k, v in expected.items() if k[0] == r}
        _, text = d.http.get(f"/api/v1/rounds/{r}/games.pgn")
        problems += check("API after the event", text, want, names)
        relay = os.path.join(work, "relay", f"round-{r}", "games.pgn")
        problems += check("relay after the event", open(relay).read() if os.path.exists(relay) else "", want)
    d.kill9()
    warnings = sum(1 for line in open(os.path.join(work, "daemon.log")) if " WARN " in line)
    starts = [t for _, t in d.starts[1:]]
    log(f"soak: {a.rounds} rounds, {len(expected)} games, {kills} kills; RSS after each round (MB): {rss}; "
        f"ready after restart: max {max(starts):.2f} s, mean {sum(starts) / len(starts):.2f} s; "
        f"daemon warnings: {warnings}; host bytes the emulators did not take: {unknown_total}")
    by_check = {}
    for p in problems:
        by_check.setdefault(p.split(":")[0], []).append(p)
    for label, ps in by_check.items():
        log(f"  {label}: {len(ps)} problems")
        for p in ps[:5]:
            log("    " + p)
    log(f"soak: {len(problems)} problems, {'0 lost' if not problems else 'FAILED'}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
