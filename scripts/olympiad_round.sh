#!/usr/bin/env bash
# An Olympiad round (issue 40): DAEMONS `eboardd run` daemons (halls), each serving
# BOARDS_PER_DAEMON emulated DGT boards (`eboardd simulate`, pseudo-terminals, human handling,
# one game each, SPEED times real pace; board numbers and serials distinct across halls, each
# hall its own `mqtt_node`), all publishing to a three-node NATS cluster on 127.0.0.1 (MQTT and
# JetStream on, the configuration of tests/e2e_nats_cluster.rs and docs/operations.md), and one
# `eboardd serve-mqtt` reading the round from the cluster. An SSE client on serve-mqtt's
# /api/v1/events/sse and the daemons' `--events` lines are read by one Python process, both
# timestamped on arrival with the same monotonic clock: every `move_made` a daemon prints is
# matched with the same move (board, game, ply, uci) on serve-mqtt's stream, giving the board ->
# serve-mqtt SSE latency (p50/p99/max) and the moves published vs received. After KILL_AFTER
# seconds the node hall-1 is connected to is killed (SIGKILL) and started again DOWN_SECS later
# (every daemon and serve-mqtt are given the nodes in the same order, as docs/operations.md
# configures them, so they all start on the first node and all fail over); how long each took to
# be connected (CONNACK) to another node is read from its log. Moves a stream lost are counted.
# After SECONDS the boards are unplugged (the emulators stop) and serve-mqtt's games.pgn is
# checked against the moves the daemons published (games and plies, every game's SAN). Prints
# each daemon's and serve-mqtt's CPU (% of one core over the measured seconds) and peak RSS.
# Exit 1 when something does not start or the round server's games differ from the daemons'.
# Usage: scripts/olympiad_round.sh [DAEMONS] [BOARDS_PER_DAEMON] [SECONDS] [SPEED]
#        (defaults 4 189 300 1: 756 boards at real pace for 5 minutes)
#        KILL_AFTER=SECS (default SECONDS/2; off: no node killed) DOWN_SECS=SECS (default
#        SECONDS/4, at most 30) KILL_NODE=1..3 (default: the node hall-1 is on)
#        PGN=FILE (default: the demo's games) FSYNC=0 (daemons with --no-fsync) KEEP=1 (keep
#        the scratch directory: logs, configs, captures, moves.tsv with every move's times)
#        EBOARDD=path/to/eboardd NATS_SERVER=path/to/nats-server
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
daemons=${1:-4}; boards=${2:-189}; seconds=${3:-300}; speed=${4:-1}
die() { echo "olympiad_round: $*" >&2; exit 1; }
[[ $daemons =~ ^[1-9][0-9]*$ && $boards =~ ^[1-9][0-9]*$ && $seconds =~ ^[1-9][0-9]*$ ]] ||
  die "DAEMONS, BOARDS_PER_DAEMON and SECONDS must be positive integers (usage: $0 [DAEMONS] [BOARDS_PER_DAEMON] [SECONDS] [SPEED])"
[[ $speed =~ ^[0-9]*\.?[0-9]+$ ]] || die "SPEED must be a number (1 = real pace)"
bin=${EBOARDD:-target/release/eboardd}
nats=${NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
[[ -x $nats ]] || die "nats-server not found (apt-get install nats-server, or NATS_SERVER=PATH)"
command -v python3 >/dev/null || die "python3 not found"
if [[ ! -x $bin ]]; then
  [[ -z ${EBOARDD:-} ]] || die "$bin is not an executable"
  cargo build --release --quiet --bin eboardd || die "cargo build failed"
fi
# Each board is a pty on both sides, each daemon's HTTP server takes its share: raise the limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
need=$((daemons * boards * 3 + 1024))
(($(ulimit -n) >= need)) || echo "olympiad_round: warning: ulimit -n is $(ulimit -n), $need wanted" >&2
dir=$(mktemp -d /tmp/eboardd-olympiad-XXXX)
py=""
cleanup() {
  local rc=$?
  set +e
  if [[ -n $py ]]; then kill -TERM "$py" 2>/dev/null; wait "$py" 2>/dev/null; fi
  # Whatever the Python process started and could not stop itself (it was killed): by pid.
  if [[ -s $dir/pids ]]; then
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$dir/pids"
  fi
  if [[ -n ${KEEP:-} ]]; then echo "scratch directory kept: $dir" >&2; else rm -rf "$dir"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

export OLY_BIN=$bin OLY_NATS=$nats OLY_DIR=$dir OLY_DAEMONS=$daemons OLY_BOARDS=$boards \
  OLY_SECONDS=$seconds OLY_SPEED=$speed
cat >"$dir/round.py" <<'PY'
import datetime, http.client, json, os, re, signal, socket, subprocess, sys, threading, time

BIN, NATS, DIR = os.environ["OLY_BIN"], os.environ["OLY_NATS"], os.environ["OLY_DIR"]
D, B = int(os.environ["OLY_DAEMONS"]), int(os.environ["OLY_BOARDS"])
SECONDS, SPEED = float(os.environ["OLY_SECONDS"]), float(os.environ["OLY_SPEED"])
kill_after = os.environ.get("KILL_AFTER", "")
KILL_AFTER = None if kill_after == "off" else float(kill_after or SECONDS / 2)
DOWN = float(os.environ.get("DOWN_SECS") or min(30.0, SECONDS / 4))
KILL_NODE = os.environ.get("KILL_NODE")
PGN = os.environ.get("PGN")
FSYNC = os.environ.get("FSYNC", "1") != "0"
TICK = os.sysconf("SC_CLK_TCK")
T0 = time.monotonic()


class Failed(Exception):
    pass


def now():
    return time.monotonic() - T0


def say(*a):
    print(*a, flush=True)


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------- processes
procs = []  # every process started here, stopped at the end


def spawn(args, log, stdout=None):
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                         stdout=stdout if stdout is not None else open(log, "ab"),
                         stderr=open(log, "ab"))
    procs.append(p)
    with open(os.path.join(DIR, "pids"), "a") as f:
        f.write(f"{p.pid}\n")
    return p


def stop(p, sig=signal.SIGTERM, wait=15.0):
    """Signal p and wait for it (SIGKILL after `wait`); its exit code, None if it was killed."""
    if p.poll() is not None:
        return p.returncode
    p.send_signal(sig)
    try:
        return p.wait(wait)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=5.0):
    """(status, body) of GET http://127.0.0.1:port/path, None when nothing answers."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        c.close()
        return r.status, body
    except (OSError, http.client.HTTPException):
        return None


def get_json(port, path):
    r = get(port, path)
    if r is None or r[0] != 200:
        return None
    try:
        return json.loads(r[1])
    except ValueError:
        return None


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError):
        return None


def peak_rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def logged(path, marker):
    try:
        with open(path, errors="replace") as f:
            return any(marker in line for line in f)
    except OSError:
        return False


def wait_until(what, cond, timeout, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise Failed(f"{what}: the process exited ({proc.returncode})"
                         + (f"; {log}:\n{tail(log)}" if log else ""))
        if time.monotonic() > deadline:
            raise Failed(f"{what}: not within {timeout:.0f} s" + (f"; {log}:\n{tail(log)}" if log else ""))
        time.sleep(0.1)


# ---------------------------------------------------------------- the NATS cluster
class Node:
    def __init__(self, i, ports, routes):
        self.name = f"n{i + 1}"
        self.client, self.cluster, self.mqtt, self.monitor = ports
        self.conf = os.path.join(DIR, f"{self.name}.conf")
        self.log = os.path.join(DIR, f"{self.name}.log")
        # As tests/support/nats.rs writes it (docs/operations.md, "A broker cluster (NATS)").
        with open(self.conf, "w") as f:
            f.write(f'server_name: {self.name}\n'
                    f'listen: "127.0.0.1:{self.client}"\n'
                    f'http: "127.0.0.1:{self.monitor}"\n'
                    f'jetstream {{ store_dir: "{os.path.join(DIR, self.name + "-store")}" }}\n'
                    f'cluster {{\n  name: eboardd\n  listen: "127.0.0.1:{self.cluster}"\n'
                    f'  routes: [{", ".join(routes)}]\n}}\n'
                    f'mqtt {{ listen: "127.0.0.1:{self.mqtt}", stream_replicas: 3 }}\n')
        self.proc = None

    def url(self):
        return f"mqtt://127.0.0.1:{self.mqtt}"

    def start(self):
        self.proc = spawn([NATS, "-c", self.conf], self.log)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def ready(self):
        if not self.running():
            return False
        health = get(self.monitor, "/healthz")
        jsz = get_json(self.monitor, "/jsz")
        if health is None or health[0] != 200 or not jsz:
            return False
        if not (jsz.get("meta_cluster") or {}).get("leader"):
            return False
        try:
            socket.create_connection(("127.0.0.1", self.mqtt), timeout=1).close()
            return True
        except OSError:
            return False

    def streams(self):
        jsz = get_json(self.monitor, "/jsz")
        return (jsz or {}).get("streams", 0)

    def mqtt_clients(self):
        connz = get_json(self.monitor, "/connz?limit=4096") if self.running() else None
        return [c["mqtt_client"] for c in (connz or {}).get("connections") or []
                if c.get("mqtt_client")]


# ---------------------------------------------------------------- what the streams carry
lock = threading.Lock()
published = {}   # (board, game, ply, uci) -> (arrival, daemon index): the daemons' --events
received = {}    # the same key -> arrival on serve-mqtt's SSE
games = {}       # board -> (game, [san]): each board's latest game as its daemon published it
repeats = {"pub": 0, "sse": 0}
sse_kinds = {}
sse_state = {"connections": 0, "snapshots": 0, "error": None}


def move_key(ev):
    return (ev.get("board"), ev.get("game"), ev.get("ply"), ev.get("uci"))


def read_daemon(i, proc):
    for raw in proc.stdout:
        at = time.monotonic()
        if b"move_" not in raw and b"game_started" not in raw and b"correction" not in raw:
            continue  # clocks and statuses: not parsed
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        kind, board = ev.get("kind"), ev.get("board")
        if kind not in ("move_made", "move_retracted", "game_started", "correction"):
            continue
        with lock:
            game, sans = games.get(board, (ev.get("game"), []))
            if ev.get("game") != game:
                game, sans = ev.get("game"), []
            if kind == "move_made":
                key = move_key(ev)
                if key in published:
                    repeats["pub"] += 1
                else:
                    published[key] = (at, i)
                sans = sans[: ev["ply"] - 1] + [ev["san"]]
            elif kind == "move_retracted":
                sans = sans[: ev["ply"] - 1]
            elif kind == "game_started":
                sans = []
            elif kind == "correction":
                say(f"  note: a correction on {board} (not expected here): {raw.decode().strip()}")
            games[board] = (game, sans)


def read_sse(port):
    last_id = None
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=None)
            headers = {"Accept": "text/event-stream"}
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            c.request("GET", "/api/v1/events/sse", headers=headers)
            r = c.getresponse()
            if r.status != 200:
                raise OSError(f"HTTP {r.status}")
            sse_state["connections"] += 1
            buf = b""
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    raise OSError("stream ended")
                at = time.monotonic()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.startswith(b"id:"):
                        last_id = line[3:].strip().decode()
                    elif line.startswith(b"event: error"):
                        sse_state["error"] = "the server sent event: error (client too slow)"
                    elif line.startswith(b"data:"):
                        if b'"kind":"snapshot"' in line:
                            sse_state["snapshots"] += 1
                            continue
                        if b"move_made" not in line:
                            m = KIND.search(line)
                            if m:
                                with lock:
                                    k = m.group(1).decode()
                                    sse_kinds[k] = sse_kinds.get(k, 0) + 1
                            continue
                        try:
                            ev = json.loads(line[5:])
                        except ValueError:
                            continue
                        if ev.get("kind") != "move_made":
                            continue
                        key = move_key(ev)
                        with lock:
                            if key in received:
                                repeats["sse"] += 1
                            else:
                                received[key] = at
        except (OSError, http.client.HTTPException) as e:
            sse_state["error"] = f"SSE connection: {e}"
            time.sleep(0.2)


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


KIND = re.compile(rb'"kind":"([a-z_]+)"')
TAG = re.compile(r'^\[[A-Za-z][A-Za-z0-9_]* ".*"\]$')


def pgn_games(text):
    """{Board tag: [san]} of every game of a PGN text."""
    out, tags, moves = {}, {}, []

    def flush():
        if tags:
            out[tags.get("Board", f"?{len(out)}")] = moves[:]

    in_moves = False
    for line in text.splitlines():
        s = line.strip()
        if TAG.match(s):
            if in_moves:
                flush()
                tags, moves, in_moves = {}, [], False
            k, _, v = s[1:-1].partition(" ")
            tags[k] = v.strip().strip('"')
        elif s:
            in_moves = True
            moves.append(s)
    if in_moves or tags:
        flush()
    for board, lines in out.items():
        text, depth, clean = " ".join(lines), 0, []
        for ch in text:  # comments {...} and variations (...) out
            if ch in "{(":
                depth += 1
            elif ch in "})":
                depth -= 1
            elif depth == 0:
                clean.append(ch)
        sans = []
        for tok in "".join(clean).split():
            tok = tok.split(".")[-1]  # "12.Nf3", "12...Nf3"
            if not tok or tok.startswith("$") or tok in ("1-0", "0-1", "1/2-1/2", "*"):
                continue
            sans.append(tok)
        out[board] = sans
    return out


# ---------------------------------------------------------------- the round
def main():
    say(f"== olympiad round: {D} daemons x {B} boards = {D * B} boards, {SECONDS:.0f} s at "
        f"{SPEED:g}x pace, a NATS cluster of 3 ({subprocess.run([NATS, '--version'], capture_output=True, text=True).stdout.strip()})")
    ports = [[free_port() for _ in range(4)] for _ in range(3)]
    routes = [f'"nats-route://127.0.0.1:{p[1]}"' for p in ports]
    nodes = [Node(i, p, routes) for i, p in enumerate(ports)]
    for n in nodes:
        n.start()
    for n in nodes:
        wait_until(f"nats-server {n.name} ready (healthz, a JetStream leader, MQTT port)",
                   n.ready, 30, n.proc, n.log)
    urls = [n.url() for n in nodes]
    say(f"cluster ready at {now():.1f} s: MQTT on {', '.join(urls)}")

    # The round server, with every node, its SSE stream read from the start.
    http_round = free_port()
    server_log = os.path.join(DIR, "serve-mqtt.log")
    server = spawn([BIN, "serve-mqtt", *[a for u in urls for a in ("--from", u)],
                    "--http", f"127.0.0.1:{http_round}", "--event", "Olympiad round"],
                   server_log, stdout=subprocess.DEVNULL)
    wait_until("eboardd serve-mqtt answering /api/v1/health",
               lambda: get(http_round, "/api/v1/health") is not None, 20, server, server_log)
    threading.Thread(target=read_sse, args=(http_round,), daemon=True).start()
    wait_until("serve-mqtt's SSE stream connected", lambda: sse_state["connections"] > 0, 10,
               server, server_log)
    # Its connection makes NATS's MQTT streams (the CONNACK comes once they are made); a node
    # may go down only once every node has them.
    wait_until("serve-mqtt connected to the cluster (its log: reading the round)",
               lambda: logged(server_log, "reading the round from the MQTT broker"), 30, server,
               server_log)
    wait_until("NATS's MQTT streams on every node", lambda: all(n.streams() >= 3 for n in nodes),
               30)

    # The halls.
    halls = []
    for d in range(D):
        name = f"hall-{d + 1}"
        hdir = os.path.join(DIR, name)
        os.makedirs(hdir)
        first_serial = 10001 + d * B
        sim_log = os.path.join(hdir, "simulate.log")
        sim_args = [BIN, "simulate", "--count", str(B), "--games-per-board", "1",
                    "--speed", str(SPEED), "--link", os.path.join(hdir, "ports"),
                    "--serial", str(first_serial), "--seed", str(d + 1)]
        if PGN:
            sim_args += ["--pgn", PGN]
        sim = spawn(sim_args, sim_log)
        links = [os.path.join(hdir, "ports", f"board-{k + 1}") for k in range(B)]
        wait_until(f"{name}: {B} emulated boards", lambda: all(os.path.exists(l) for l in links),
                   60, sim, sim_log)
        http_port = free_port()
        config = os.path.join(hdir, "eboardd.toml")
        with open(config, "w") as f:
            f.write(f'[event]\nname = "Olympiad round"\nround = "1"\n\n'
                    f'[outputs]\nhttp = "127.0.0.1:{http_port}"\n'
                    f'mqtt = [{", ".join(json.dumps(u) for u in urls)}]\n'
                    f'mqtt_node = "{name}"\n\n')
            for k in range(B):  # board numbers d*B+1 ... by the serials the emulators report
                f.write(f'[[board]]\nnumber = {d * B + k + 1}\n'
                        f'serial = "{(first_serial + k) % 100000:05}"\n\n')
        log = os.path.join(hdir, "run.log")
        args = [BIN, "run", "--config", config, "--no-discovery", "--events",
                "--capture-dir", os.path.join(hdir, "captures")]
        if not FSYNC:
            args.append("--no-fsync")
        for l in links:
            args += ["--port", l]
        proc = spawn(args, log, stdout=subprocess.PIPE)
        threading.Thread(target=read_daemon, args=(d, proc), daemon=True).start()
        wait_until(f"{name}: eboardd run answering /api/v1/health",
                   lambda: get(http_port, "/api/v1/health") is not None, 30, proc, log)
        wait_until(f"{name}: connected to the cluster (its log: MQTT broker reached)",
                   lambda: logged(log, "MQTT broker reached"), 30, proc, log)
        halls.append({"name": name, "proc": proc, "sim": sim, "http": http_port, "log": log,
                      "sim_log": sim_log, "boards": range(d * B + 1, d * B + B + 1)})
    say(f"{D} daemons started at {now():.1f} s (board numbers 1-{D * B}); measuring {SECONDS:.0f} s")

    def connected_after(log, marker, wall):
        """(seconds after `wall`, broker) of the first `marker` line of `log` (the MQTT
        connection acknowledged) logged after `wall`, None if there is none."""
        with open(log, errors="replace") as f:
            for line in f:
                if marker not in line:
                    continue
                try:
                    at = datetime.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00"))
                except (ValueError, IndexError):
                    continue
                if at.timestamp() >= wall:
                    return at.timestamp() - wall, line.rsplit("broker=", 1)[-1].split()[0]
        return None

    def failover(wall):
        """Who is connected (CONNACK) to another node, how long after `wall`."""
        out = {h["name"]: connected_after(h["log"], "MQTT broker reached", wall) for h in halls}
        out["serve-mqtt"] = connected_after(server_log, "reading the round from the MQTT broker",
                                            wall)
        return out

    def said(moved):
        return ", ".join(f"{k} after {v[0]:.2f} s ({v[1]})" if v else f"{k} not yet"
                         for k, v in moved.items())

    def clients_by_node():
        return {n.name: n.mqtt_clients() for n in nodes if n.running()}

    # The measured window.
    measured = [(h["name"], h["proc"]) for h in halls] + [("serve-mqtt", server)]
    ticks0 = {p.pid: cpu_ticks(p.pid) for _, p in measured}
    sims0 = sum(cpu_ticks(h["sim"].pid) or 0 for h in halls)
    nats_ticks = {n.name: -(cpu_ticks(n.proc.pid) or 0) for n in nodes}
    self0 = os.times()
    start = time.monotonic()
    kill = {"at": None, "node": None, "restart_at": None, "ready_at": None}
    while True:
        t = time.monotonic() - start
        if t >= SECONDS:
            break
        for name, p in measured:
            if p.poll() is not None:
                raise Failed(f"{name} exited ({p.returncode}) at {t:.0f} s of the round")
        if KILL_AFTER is not None and kill["at"] is None and t >= KILL_AFTER:
            on = clients_by_node()
            if KILL_NODE:
                victim = nodes[int(KILL_NODE) - 1]
            else:
                hall1 = f"eboardd-hall-1-{halls[0]['proc'].pid}"
                victim = next((n for n in nodes if hall1 in on.get(n.name, [])), nodes[0])
            nats_ticks[victim.name] += cpu_ticks(victim.proc.pid) or 0
            kill["wall"] = time.time()
            victim.proc.kill()
            victim.proc.wait()
            kill.update(at=t, node=victim, on=on.get(victim.name, []))
            say(f"{t:6.1f} s  node {victim.name} killed (SIGKILL); its MQTT clients: "
                f"{', '.join(sorted(on.get(victim.name, []))) or 'none'}")
        if kill["at"] is not None and kill["restart_at"] is None and t >= kill["at"] + DOWN:
            kill["node"].start()
            kill["restart_at"] = t
            say(f"{t:6.1f} s  node {kill['node'].name} started again; connected to another node "
                f"by then: {said(failover(kill['wall']))}")
        if kill["restart_at"] is not None and kill["ready_at"] is None and kill["node"].ready():
            kill["ready_at"] = t
            say(f"{t:6.1f} s  node {kill['node'].name} ready again "
                f"({t - kill['restart_at']:.1f} s after its start)")
        time.sleep(0.25 if kill["at"] is not None and kill["ready_at"] is None else 1.0)
    elapsed = time.monotonic() - start
    cpu = {p.pid: ((cpu_ticks(p.pid) or 0) - (ticks0[p.pid] or 0)) / TICK / elapsed * 100
           for _, p in measured}
    rss = {p.pid: peak_rss_mb(p.pid) for _, p in measured}
    sims_cpu = (sum(cpu_ticks(h["sim"].pid) or 0 for h in halls) - sims0) / TICK / elapsed * 100
    nats_rss = {n.name: peak_rss_mb(n.proc.pid) for n in nodes if n.running()}
    nats_cpu = {n.name: (nats_ticks[n.name] + (cpu_ticks(n.proc.pid) or 0)) / TICK / elapsed * 100
                for n in nodes}
    self1 = os.times()
    self_cpu = (self1.user + self1.system - self0.user - self0.system) / elapsed * 100

    # The boards are unplugged: the games stand still; the round server must show the
    # daemons' moves.
    say(f"{now():.1f} s: {elapsed:.0f} s measured; the emulated boards stop")
    unplugged = time.time()
    not_taken = []
    for h in halls:
        stop(h["sim"])
        line = [l for l in tail(h["sim_log"], 50).splitlines() if "emulators stopped" in l]
        if line and not line[-1].startswith("emulators stopped: 0 "):
            not_taken.append(f"{h['name']}: {line[-1]}")

    def expected():
        with lock:
            return {b: s for b, (_, s) in games.items() if s}

    def served():
        r = get(http_round, "/api/v1/games.pgn", timeout=30)
        return {b: s for b, s in pgn_games(r[1]).items() if s} if r and r[0] == 200 else {}

    deadline = time.monotonic() + 30
    while served() != expected() and time.monotonic() < deadline:
        time.sleep(1)
    want, got = expected(), served()
    daemon_pgn = {}
    for h in halls:
        r = get(h["http"], "/api/v1/games.pgn", timeout=30)
        daemon_pgn.update({b: s for b, s in pgn_games(r[1] if r and r[0] == 200 else "").items() if s})

    # Report.
    with lock:
        pub = dict(published)
        rec = dict(received)
    lat = {k: (rec[k] - at) * 1000 for k, (at, _) in pub.items() if k in rec}
    early = [k for k in lat if pub[k][0] < start]  # start-up: before the measured window
    # A move the player took back on the board (a retraction, then another move at its ply) is
    # superseded: a stream that lost it and got the move that stood lacks nothing (serve-mqtt
    # catches a board up from its state, which has only the moves that stood).
    later_at = {}
    for (b, g, p, u), (at, _) in pub.items():
        later_at[(b, g, p)] = max(later_at.get((b, g, p), at), at)
    superseded = {k for k in pub if pub[k][0] < later_at[k[:3]]}
    missing = [k for k in pub if k not in rec and k not in superseded]
    skipped = [k for k in pub if k not in rec and k in superseded]
    with open(os.path.join(DIR, "moves.tsv"), "w") as f:  # for a look with KEEP=1
        f.write("board\tgame\tply\tuci\thall\tpublished_s\treceived_s\n")
        for k, (at, i) in sorted(pub.items(), key=lambda kv: kv[1][0]):
            got_at = f"{rec[k] - start:.4f}" if k in rec else "-"
            f.write("\t".join(map(str, k)) + f"\t{halls[i]['name']}\t{at - start:.4f}\t{got_at}\n")
    unexpected = [k for k in rec if k not in pub]
    say("")
    if kill["at"] is not None:
        say(f"node {kill['node'].name} killed at {kill['at']:.0f} s with "
            f"{len(kill['on'])} MQTT clients on it; connected (CONNACK, by their logs) to "
            f"another node: {said(failover(kill['wall']))}"
            + (f"; started again at {kill['restart_at']:.0f} s" if kill["restart_at"] is not None
               else "; not started again before the end (DOWN_SECS)")
            + (f", ready {kill['ready_at'] - kill['restart_at']:.1f} s later"
               if kill["ready_at"] is not None else ", NOT ready again by the end"))
    say(f"moves (move_made): published {len(pub)} by the daemons, received {len(lat)} of them on "
        f"serve-mqtt's SSE; missing {len(missing)} (and {len(skipped)} taken back on the board "
        f"before the stream had them, the move that stood received), unexpected "
        f"{len(unexpected)}; repeated "
        f"{repeats['pub']} published, {repeats['sse']} received; SSE connections "
        f"{sse_state['connections']}, snapshots {sse_state['snapshots']}"
        + (f" ({sse_state['error']})" if sse_state["error"] else ""))

    def line(label, xs):
        if not xs:
            return f"  {label}: no moves"
        return (f"  {label} ({len(xs)} moves): p50 {percentile(xs, 50):.1f} ms, "
                f"p99 {percentile(xs, 99):.1f} ms, max {max(xs):.1f} ms")

    say("  other messages on the SSE stream: "
        + ", ".join(f"{k} {v}" for k, v in sorted(sse_kinds.items())))
    say("board -> serve-mqtt SSE latency (daemon's --events line to the SSE line, one clock; "
        f"moves published in the measured {elapsed:.0f} s, {len(early)} before it left out):")
    for k in early:
        del lat[k]
    say(line("all", list(lat.values())))
    if kill["at"] is not None:
        lo = start + kill["at"]
        hi = start + (kill["ready_at"] if kill["ready_at"] is not None else elapsed) + 10
        say(line("while every node was up",
                 [v for k, v in lat.items() if not lo <= pub[k][0] < hi]))
        say(line("from the kill until 10 s after the node was back",
                 [v for k, v in lat.items() if lo <= pub[k][0] < hi]))
        miss_in = sum(1 for k in missing if lo <= pub[k][0] < hi)
        if missing:
            say(f"  missing moves published in that window: {miss_in} of {len(missing)}")
    if missing:
        # A hole: a later move of the same game did come on the stream.
        holes = {(b, g) for (b, g, p, _) in missing
                 if any(k[0] == b and k[1] == g and k[2] > p for k in rec)}
        say(f"  the {len(missing)} missing moves leave holes in the streamed games of "
            f"{len(holes)} boards (later moves of those games did arrive)")
    for i, h in enumerate(halls):
        xs = [v for k, v in lat.items() if pub[k][1] == i]
        say(line(h["name"], xs))

    def slowest(label, items):
        slow = sorted(items, key=lambda kv: -kv[1])[:3]
        if slow:
            say(f"  {label}: " + "; ".join(f"{k[0]} ply {k[2]} published at "
                                          f"{pub[k][0] - start:.1f} s: {v:.0f} ms" for k, v in slow))

    slowest("slowest", lat.items())
    if kill["at"] is not None:
        slowest("slowest while every node was up",
                [(k, v) for k, v in lat.items() if not lo <= pub[k][0] < hi])
    say("")
    say(f"{'process':<34} {'CPU % of one core':>18} {'peak RSS MB':>12}")
    for (name, p), h in zip(measured, halls + [None]):
        what = f"{name} (eboardd run, {B} boards)" if h else "serve-mqtt"
        say(f"{what:<34} {cpu[p.pid]:>18.1f} {rss[p.pid] or 0:>12.1f}")
    for n in nodes:
        what = f"nats-server {n.name}" + (" (killed, restarted)" if n is kill["node"] else "")
        say(f"{what:<34} {nats_cpu[n.name]:>18.1f} {nats_rss.get(n.name) or 0:>12.1f}")
    say(f"{'emulators (all simulate processes)':<34} {sims_cpu:>18.1f}")
    say(f"{'this script (SSE and --events reader)':<34} {self_cpu:>18.1f}")
    say("")
    plies = lambda g: sum(len(s) for s in g.values())
    ok = want == got
    say(f"games.pgn of serve-mqtt: {len(got)} games, {plies(got)} plies; the daemons published "
        f"{len(want)} games, {plies(want)} plies (their own games.pgn: {len(daemon_pgn)} games, "
        f"{plies(daemon_pgn)} plies): " + ("every game equal" if ok else "DIFFERENT"))
    if not ok:
        for path, what in [("served.pgn", "/api/v1/games.pgn"), ("served-boards.json", "/api/v1/boards")]:
            r = get(http_round, what, timeout=30)  # for a look with KEEP=1
            with open(os.path.join(DIR, path), "w") as f:
                f.write(r[1] if r else "")
        bad = sorted(set(want) | set(got), key=lambda b: str(b))
        bad = [b for b in bad if want.get(b) != got.get(b)]
        for b in bad[:10]:
            w, g = want.get(b, []), got.get(b, [])
            n = next((i for i, (x, y) in enumerate(zip(w, g)) if x != y), min(len(w), len(g)))
            say(f"  {b}: published {len(w)} plies, served {len(g)}; first difference at ply {n + 1}")
        if len(bad) > 10:
            say(f"  ... {len(bad) - 10} more boards differ")
    if daemon_pgn != want:
        say("  note: the daemons' own games.pgn differs from their --events in "
            f"{sum(1 for b in set(want) | set(daemon_pgn) if want.get(b) != daemon_pgn.get(b))} boards")
    for n in not_taken:
        say(f"  emulators: {n}")

    # Clean stops; their exit codes and warnings.
    codes = {h["name"]: stop(h["proc"]) for h in halls}
    codes["serve-mqtt"] = stop(server)
    bad_exit = {k: v for k, v in codes.items() if v != 0}
    if bad_exit:
        say(f"exit after SIGTERM not 0: {bad_exit}")
    for name, log in [(h["name"], h["log"]) for h in halls] + [("serve-mqtt", server_log)]:
        # Before the boards were unplugged (then every link is lost, as it should be).
        warns = []
        with open(log, errors="replace") as f:
            for l in f:
                if " WARN " not in l and " ERROR " not in l:
                    continue
                try:
                    at = datetime.datetime.fromisoformat(l.split()[0].replace("Z", "+00:00"))
                except (ValueError, IndexError):
                    at = None
                if at is None or at.timestamp() < unplugged:
                    warns.append(l.split(None, 1)[-1].strip())
        if warns:
            say(f"{name}: {len(warns)} WARN/ERROR lines while the boards played; "
                + "; ".join(w[:160] for w in warns[:3]) + ("; ..." if len(warns) > 3 else ""))
    return 0 if ok and not bad_exit else 1


rc = 1
try:
    rc = main()
except Failed as e:
    print(f"olympiad_round: {e}", file=sys.stderr)
except SystemExit as e:
    rc = e.code if isinstance(e.code, int) else 1
finally:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut this short
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for p in reversed(procs):
        stop(p, wait=5.0)
sys.exit(rc)
PY
python3 -u "$dir/round.py" &
py=$!
wait "$py" && rc=0 || rc=$?
py=""
exit "$rc"
