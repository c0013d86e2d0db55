// The overlays for streams and venue screens (docs/broadcast.md, "Overlays"): one board
// (/overlay/BOARD, BOARD a board id or number) or every board of the round on one strip
// (/overlay/round). Data: GET /api/v1/boards and /api/v1/boards/{id}, then the event stream
// (/api/v1/events); no token is ever sent, so under a broadcast delay this is the delayed view.
// Served as /web/overlay.js (src/output/overlay.rs); drawing helpers from /web/chess.js.
"use strict";
const VIEW = document.body.dataset.view; // "board" or "round"
/** The board asked for: the last path segment (an id, else a board number). */
const KEY = VIEW === "board" ? decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop()) : null;
const st = { boards: new Map(), order: [], seq: 0, event: null, round: null, at: new Map(), pending: new Set(), timer: null, shown: null };
const $ = (id) => document.getElementById(id);

/** The board this overlay shows: the one with id KEY, else the one numbered KEY. */
function shown() {
  if (st.boards.has(KEY)) return st.boards.get(KEY);
  for (const id of st.order) { const b = st.boards.get(id); if (String(b.number) === KEY) return b; }
  return null;
}
/** A player as shown: title, name, rating and federation when the pairing has them. */
function playerParts(p, side) {
  p = p || {};
  return { title: p.title || "", name: p.name || side, meta: [p.elo, p.federation].filter(Boolean).join(" · ") };
}
/** "23. Nf3" or "23… Nf3" for a board's last move, "" before the first. */
function lastMoveText(b) {
  const lm = b.game && b.game.last_move;
  if (!lm) return "";
  const f = String(b.game.start_fen || "").split(" ");
  const idx = lm.ply - 1 + (f[1] === "b" ? 1 : 0), no = (Number(f[5]) || 1) + Math.floor(idx / 2);
  return no + (idx % 2 === 0 ? ". " : "… ") + lm.san;
}
/** The result when the game is over ("1-0", "½-½"), else "". */
function resultText(b) {
  const r = b.game && b.game.result;
  if (!r || r === "*") return "";
  return r === "1/2-1/2" ? "½-½" : r;
}

function setSnapshot(snap) {
  st.boards.clear(); st.order = [];
  const now = performance.now();
  for (const b of snap.boards) { st.boards.set(b.board, b); st.order.push(b.board); st.at.set(b.board, now); }
  st.seq = snap.seq; st.event = snap.event; st.round = snap.round;
  render();
}
function setBoard(b) {
  if (!st.boards.has(b.board)) {
    st.order.push(b.board);
    const num = id => st.boards.get(id)?.number ?? Infinity;
    st.boards.set(b.board, b);
    st.order.sort((x, y) => num(x) - num(y) || (x < y ? -1 : x > y ? 1 : 0));
  }
  st.boards.set(b.board, b); st.at.set(b.board, performance.now());
  render();
}
async function refresh(id) {
  try {
    const r = await fetch(id ? "/api/v1/boards/" + encodeURIComponent(id) : "/api/v1/boards", { cache: "no-store" });
    if (!r.ok) return;
    if (id) setBoard(await r.json()); else setSnapshot(await r.json());
  } catch (e) { /* the next event retries */ }
}
/** Fetch a changed board (or, with null, the whole round) soon, once for a burst of events. */
function schedule(id) {
  st.pending.add(id);
  if (st.timer) return;
  st.timer = setTimeout(() => {
    const ids = [...st.pending]; st.pending.clear(); st.timer = null;
    if (ids.includes(null)) refresh(null); else ids.forEach(refresh);
  }, 150);
}
function onEvent(ev) {
  if (ev.kind === "snapshot") { setSnapshot(ev); return; }
  if (typeof ev.seq === "number") st.seq = Math.max(st.seq, ev.seq);
  const b = st.boards.get(ev.board);
  if (ev.kind === "clock" && b) {
    b.clock = { white: ev.white, black: ev.black, running: ev.running, t: ev.t };
    st.at.set(ev.board, performance.now());
    tick();
    return;
  }
  // A round loaded (board numbers and names may change), or a board not seen yet.
  if ((ev.kind === "players" && ev.round) || !b) { schedule(null); return; }
  // The one-board overlay fetches only its own board.
  if (VIEW === "board" && st.shown && ev.board !== st.shown) return;
  schedule(ev.board);
}
function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(proto + "//" + location.host + "/api/v1/events" + (st.seq ? "?since=" + st.seq : ""));
  ws.onmessage = (m) => { try { onEvent(JSON.parse(m.data)); } catch (e) { console.error(e); } };
  ws.onclose = () => setTimeout(connect, 1000);
}

// --- One board -----------------------------------------------------------------------------

function playerHtml(b, side) {
  const p = playerParts(b[side], side === "white" ? "White" : "Black");
  return '<div class="pl ' + side + '"><div class="who"><span class="dot ' + side[0] + '"></span>' +
    (p.title ? '<span class="title">' + esc(p.title) + "</span>" : "") + '<span class="pname">' + esc(p.name) + "</span></div>" +
    '<div class="row"><span class="meta">' + esc(p.meta) + '</span><span class="clk" data-clk="' + side + '"></span></div></div>';
}
function renderBoard() {
  const b = shown();
  st.shown = b ? b.board : null;
  const ov = $("ov");
  if (!b) { ov.innerHTML = '<div class="panel"><div class="mid">No board ' + esc(KEY) + "</div></div>"; return; }
  const g = b.game;
  const res = resultText(b), last = lastMoveText(b);
  const head = ["Board " + (b.number ?? ""), st.event, st.round ? "round " + st.round : ""].filter(Boolean).join(" · ");
  const mid = res
    ? '<span class="res">' + esc(res) + "</span>" + (g.reason ? '<span class="reason">' + esc(g.reason.replace(/_/g, " ")) + "</span>" : "") +
      (last ? '<span class="last">' + esc(last) + "</span>" : "")
    : (last ? '<span class="last">' + esc(last) + "</span>" : '<span class="reason">' + (g ? "first move to come" : "no game yet") + "</span>");
  ov.innerHTML = diagramHtml(g && g.fen, lastSquares(b)) +
    '<div class="panel"><div class="head">' + esc(head) + "</div>" + playerHtml(b, "black") +
    '<div class="mid">' + mid + "</div>" + playerHtml(b, "white") + "</div>";
  tick();
}

// --- The round's strip ---------------------------------------------------------------------

function cellHtml(b) {
  const w = playerParts(b.white, "White"), k = playerParts(b.black, "Black");
  const res = resultText(b);
  // "Last, First" is shown as "Last, F." (the whole name as the tooltip).
  const short = (n) => { const [last, first] = n.split(/,\s*/, 2); return first ? last + ", " + first[0] + "." : n; };
  const name = (p) => (p.title ? '<span class="title">' + esc(p.title) + "</span>" : "") +
    '<span title="' + esc(p.name) + '">' + esc(short(p.name)) + "</span>";
  return '<div class="cell' + (res ? " over" : "") + '" data-board="' + esc(b.board) + '"><span class="num">' + esc(b.number ?? "") + "</span>" +
    '<span class="names"><span class="n w"><span class="dot w"></span>' + name(w) + '</span><span class="n b"><span class="dot b"></span>' + name(k) + "</span></span>" +
    '<span class="clks"><span class="ck" data-rclk="white"></span><span class="ck" data-rclk="black"></span></span>' +
    '<span class="state">' + (res ? '<span class="res">' + esc(res) + "</span>" : '<span class="last">' + esc(lastMoveText(b) || "–") + "</span>") + "</span></div>";
}
function renderRound() {
  const strip = $("strip");
  const n = st.order.length;
  // Columns so that a name fits: up to 4 boards on 2 columns, 9 on 3, 16 on 4, 36 on 6, then 8
  // (the strip takes about a third of the height however many boards; the font shrinks).
  const cols = n <= 2 ? Math.max(n, 1) : n <= 4 ? 2 : n <= 9 ? 3 : n <= 16 ? 4 : n <= 36 ? 6 : 8;
  strip.style.setProperty("--cols", cols);
  const head = [st.event, st.round ? "round " + st.round : ""].filter(Boolean).join(" · ");
  strip.innerHTML = (head ? '<div class="head">' + esc(head) + "</div>" : "") +
    '<div class="cells">' + st.order.map(id => cellHtml(st.boards.get(id))).join("") + "</div>";
  tick();
}

function render() { if (VIEW === "board") renderBoard(); else renderRound(); }
/** Show the clocks `v` (from clockNow) in the elements `els` (white's, black's). */
function showClocks(v, els) {
  ["white", "black"].forEach((side, i) => {
    const el = els[i]; if (!el) return;
    const ms = v ? v[side] : null;
    const text = fmtClock(ms, true);
    if (el.textContent !== text) el.textContent = text;
    el.classList.toggle("run", !!v && v.running === side);
    el.classList.toggle("low", ms != null && ms < 20000);
  });
}
/** The clocks on the page, counted down between updates (only the running one moves): the
 *  board shown, or every board of the round's strip. */
function tick() {
  if (VIEW === "round") {
    for (const cell of document.querySelectorAll(".cell[data-board]")) {
      const b = st.boards.get(cell.dataset.board); if (!b) continue;
      showClocks(clockNow(b, st.at.get(b.board)), [cell.querySelector('[data-rclk="white"]'), cell.querySelector('[data-rclk="black"]')]);
    }
    return;
  }
  if (!st.shown) return;
  const b = st.boards.get(st.shown); if (!b) return;
  showClocks(clockNow(b, st.at.get(b.board)), [document.querySelector('[data-clk="white"]'), document.querySelector('[data-clk="black"]')]);
}
setInterval(tick, 100);
function start() {
  fetch("/api/v1/boards", { cache: "no-store" }).then(r => r.json()).then(s => { setSnapshot(s); connect(); })
    .catch(() => setTimeout(start, 2000));
}
start();
