// eboardd's chess drawing, shared by the arbiter page (/) and the overlays (/overlay/...):
// the pieces (SVG symbols drawn for eboardd, added to the page once), a diagram from a FEN,
// clock times, HTML escaping. Served as /web/chess.js (src/output/overlay.rs).
"use strict";
/** Piece names by FEN letter. */
const PIECE = { K:"king", Q:"queen", R:"rook", B:"bishop", N:"knight", P:"pawn" };
/** The pieces (viewBox 45×45): fill and outline come from the .pc.w / .pc.b classes. */
const PIECE_SYMBOLS = [
  '<symbol id="pP" viewBox="3.5 2.5 38 38"><circle cx="22.5" cy="13" r="5.5"/><path d="M17.5 21h10l-1.5 3.5c3 2.8 5.5 6.8 5.5 11.5h-18c0-4.7 2.5-8.7 5.5-11.5z"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>',
  '<symbol id="pR" viewBox="3.5 2.5 38 38"><path d="M14 36l1.5-14h14L31 36z"/><path d="M12.5 22v-8.5h4v3.2h4v-3.2h4v3.2h4v-3.2h4V22z"/><path style="fill:none;stroke:var(--pd)" d="M15.5 26h14"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>',
  '<symbol id="pB" viewBox="3.5 2.5 38 38"><path d="M15 36c.5-4 2.5-7.5 4-9h7c1.5 1.5 3.5 5 4 9z"/><path d="M22.5 9c-5 3.5-8 9-7 13.5.5 2.5 3.5 4.5 7 4.5s6.5-2 7-4.5c1-4.5-2-10-7-13.5z"/><circle cx="22.5" cy="7" r="2.3"/><path style="fill:none;stroke:var(--pd)" d="M22.5 14.5v7M19.5 18h6"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>',
  '<symbol id="pN" viewBox="3.5 2.5 38 38"><path d="M14 36c0-6 3-9 6-12.5 1.5-1.8 1.5-3.5.5-4.5-2 1.5-4.5 2.5-6.5 3.5-2 1-3.5-.5-3-2.5.5-2 3-4.5 5-6.5l2-4 1-3 2 2.5c6 .5 12 5.5 13 13.5.5 4 .5 10 0 14z"/><circle style="fill:var(--pd);stroke:none" cx="18.5" cy="13.5" r="1.4"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>',
  '<symbol id="pQ" viewBox="3.5 2.5 38 38"><path d="M12.5 36L9.5 17l6 8.5 1-12.5 4.5 11.5 1.5-13 1.5 13 4.5-11.5 1 12.5 6-8.5-3 19z"/><circle cx="9.5" cy="15.5" r="2.2"/><circle cx="16.5" cy="11" r="2.2"/><circle cx="22.5" cy="9.5" r="2.2"/><circle cx="28.5" cy="11" r="2.2"/><circle cx="35.5" cy="15.5" r="2.2"/><path style="fill:none;stroke:var(--pd)" d="M13.5 31.5h18"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>',
  '<symbol id="pK" viewBox="3.5 2.5 38 38"><path d="M12.5 36c-4.5-5.5-4.5-13.5 2-15 3.5-.8 6 1.2 8 4.5 2-3.3 4.5-5.3 8-4.5 6.5 1.5 6.5 9.5 2 15z"/><path d="M19.5 23.5c0-4 1.3-7 3-8.5 1.7 1.5 3 4.5 3 8.5z"/><path style="fill:none;stroke:var(--ps);stroke-width:2.6" d="M22.5 3.5v10M18.5 7.5h8"/><path style="fill:none;stroke:var(--pd)" d="M14 31.5h17"/><path d="M11 39.5v-3.5h23v3.5z"/></symbol>'
].join("");
document.body.insertAdjacentHTML("afterbegin",
  '<svg width="0" height="0" style="position:absolute" aria-hidden="true">' + PIECE_SYMBOLS + "</svg>");
/** One piece (FEN letter) as SVG using its symbol. */
function pieceSvg(p) {
  const up = p.toUpperCase(), white = p === up;
  return '<svg class="pc ' + (white ? "w" : "b") + '" viewBox="0 0 45 45" role="img" aria-label="' +
    (white ? "white " : "black ") + PIECE[up] + '"><use href="#p' + up + '"/></svg>';
}
/** Text made safe for HTML. */
function esc(s) { return String(s ?? "").replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c])); }
/** A clock time (ms) as h:mm:ss or m:ss; with `tenths`, under 20 s as s.t (0:09.4). */
function fmtClock(ms, tenths) {
  if (ms == null) return "–";
  if (tenths && ms < 20000) {
    const d = Math.max(0, Math.floor(ms / 100));
    return "0:" + String(Math.floor(d / 10)).padStart(2, "0") + "." + (d % 10);
  }
  const s = Math.max(0, Math.floor(ms / 1000)), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return (h ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(x).padStart(2, "0");
}
/** The from- and to-square of a board's last move (`game.last_move.uci`), or []. */
function lastSquares(b) {
  const lm = b.game && b.game.last_move;
  if (!lm || !lm.uci) return [];
  return [lm.uci.slice(0, 2), lm.uci.slice(2, 4)];
}
/** A diagram (White at the bottom) of a FEN's placement: 64 `.sq` cells, the `last` squares
 *  ([from, to]) marked, the squares in `marked` (a Set) given the class `irr`. */
function diagramHtml(fen, last, marked) {
  const placement = (fen || "8/8/8/8/8/8/8/8").split(" ")[0];
  last = last || []; marked = marked || new Set();
  let html = "", rank = 8;
  for (const row of placement.split("/")) {
    let file = 0;
    for (const c of row) {
      if (/[1-8]/.test(c)) { for (let k = 0; k < +c; k++) html += sq(file++, rank, ""); }
      else html += sq(file++, rank, c);
    }
    rank--;
  }
  return '<div class="board" aria-label="board diagram">' + html + "</div>";
  function sq(f, r, p) {
    const name = "abcdefgh"[f] + r;
    const cls = ["sq", (f + r) % 2 ? "d" : "l", last[0] === name ? "last from" : "", last[1] === name ? "last to" : "",
                 marked.has(name) ? "irr" : ""].filter(Boolean).join(" ");
    const co = (r === 1 ? '<span class="co f">' + "abcdefgh"[f] + "</span>" : "") + (f === 0 ? '<span class="co r">' + r + "</span>" : "");
    return '<div class="' + cls + '" data-sq="' + name + '">' + (p ? pieceSvg(p) : "") + co + "</div>";
  }
}
/** A board's clock now: the times of its last clock state, the running side's counted down by
 *  the time since `receivedAt` (performance.now() when that state arrived); nothing runs once
 *  the game is over, the link is down or the clock is stopped. */
function clockNow(b, receivedAt) {
  const c = b.clock; if (!c) return null;
  let w = c.white, k = c.black;
  const over = b.game && b.game.result && b.game.result !== "*";
  const running = b.game && !over && b.link !== "disconnected" ? c.running : null;
  const dt = performance.now() - (receivedAt ?? performance.now());
  if (running === "white") w -= dt; else if (running === "black") k -= dt;
  return { white: w, black: k, running };
}
