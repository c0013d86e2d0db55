//! Simulated boards: synthesise what a DGT board and a DGT 3000 clock send while people play a
//! game, as capture records (`docs/capture-format.md`).
//!
//! The pipeline: a game ([`pgn::ScriptGame`] or a move list) → physical hand actions per move
//! ([`hand`]) with times and clock presses ([`timeline`]) → what the scanning board reports
//! ([`scan`]) and what the clock reports ([`clock`]) → `rx` records of encoded frames. Everything
//! is driven by one seed: the same game and configuration give the same bytes.

pub mod bluez;
pub mod clock;
pub mod emulator;
pub mod families;
pub mod hand;
#[cfg(feature = "test-support")]
pub mod inject;
pub mod memory;
pub mod pgn;
pub mod pty;
pub mod rng;
pub mod scan;
pub mod timeline;

use shakmaty::{CastlingMode, Chess, Move, Position, Square};

use crate::capture::{CaptureWriter, Record, RecordKind};
use crate::core::observation::{FieldArray, Micros, SquareReading};
use crate::driver::dgt::DgtMessage;
use clock::{ClockConfig, Dgt3000};
use pgn::ScriptGame;
use rng::Rng;
use scan::ScanTiming;
use timeline::PlyTrace;

/// How the players handle the pieces and how the board reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Style {
    /// Textbook handling (captured piece lifted first, king-first castling, direct promotion),
    /// every physical change reported at once and in order.
    Clean,
    /// Ordinary players on a scanning board: every handling order, changes reported per
    /// 200–250 ms scan; clock pressed 0.3–3 s after the last placement.
    #[default]
    Human,
    /// As `Human`, faster hands, clock pressed 50–300 ms after the last placement (so the press
    /// may be reported before the move's last field update).
    Blitz,
}

/// The records of a simulated capture: `tx 42` (board dump request), the dump of `start`,
/// `tx 43` (update mode), then every message of `timeline` (sorted by time here) as `rx`.
pub fn capture_records(
    start: &Chess,
    cfg: &SimConfig,
    mut timeline: Vec<(Micros, DgtMessage)>,
) -> Vec<Record> {
    timeline.sort_by_key(|(t, _)| *t);
    let mut dump: FieldArray = [SquareReading::Empty; 64];
    for (sq, piece) in start.board() {
        dump[usize::from(field_index(sq, cfg.reversed_board))] = SquareReading::Piece(piece);
    }
    let rec = |t: Micros, kind| Record {
        t,
        dev: cfg.dev.clone(),
        kind,
    };
    let mut records = vec![
        rec(0, RecordKind::Tx(vec![0x42])),
        rec(
            10_000,
            RecordKind::Rx(DgtMessage::BoardDump(Box::new(dump)).encode()),
        ),
        rec(20_000, RecordKind::Tx(vec![0x43])),
    ];
    records.extend(
        timeline
            .into_iter()
            .map(|(t, m)| rec(t, RecordKind::Rx(m.encode()))),
    );
    records
}

/// Settings of one simulated game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// Handling and reporting style.
    pub style: Style,
    /// Seed of every random choice.
    pub seed: u64,
    /// The board is turned round (connector on White's right): field index = 63 − normal.
    pub reversed_board: bool,
    /// White's clock face is the right one; `None` = chosen at random per game.
    pub white_on_right: Option<bool>,
    /// Inject one-scan sensor glitches (a square reads empty for one scan).
    pub glitches: bool,
    /// Slide rooks, bishops, queens (and castling kings) over the squares in between.
    pub slides: bool,
    /// Device id of the records.
    pub dev: String,
    /// Clock starting time per side, milliseconds.
    pub base_ms: u32,
    /// Clock increment per move, milliseconds.
    pub increment_ms: u32,
    /// Send a BWTIME every second while the clock runs (besides one per press);
    /// `None` = chosen at random per game (a quarter of the games; never in `Clean` style).
    pub clock_ticks: Option<bool>,
    /// The players end each game of a [script](emulator::Script) as the source game ended
    /// (its `Result` tag): they stop the clock and, unless the final position ends the game by
    /// rule (checkmate, stalemate, no mating material), signal the result with the kings on
    /// the centre squares (`docs/events.md`, `kings_signal`); the clock's base time is raised
    /// by what the hands' time takes beyond the source's `[%clk]`, so that no flag falls where
    /// the source's did not. Off: the game stops after its last move and the clock is
    /// stopped, the result left unsaid.
    pub signal_result: bool,
}

impl SimConfig {
    /// Defaults for `style` with `seed`: glitches and slides on except in `Clean` style,
    /// normal board, random clock side, 90 min + 30 s, device `"board-1"`.
    pub fn new(style: Style, seed: u64) -> SimConfig {
        let noisy = style != Style::Clean;
        SimConfig {
            style,
            seed,
            reversed_board: false,
            white_on_right: None,
            glitches: noisy,
            slides: noisy,
            dev: "board-1".to_owned(),
            base_ms: 90 * 60 * 1000,
            increment_ms: 30_000,
            clock_ticks: None,
            signal_result: false,
        }
    }

    /// [`SimConfig::new`] with [`Style::Clean`].
    pub fn clean(seed: u64) -> SimConfig {
        SimConfig::new(Style::Clean, seed)
    }

    /// [`SimConfig::new`] with [`Style::Human`].
    pub fn human(seed: u64) -> SimConfig {
        SimConfig::new(Style::Human, seed)
    }

    /// [`SimConfig::new`] with [`Style::Blitz`].
    pub fn blitz(seed: u64) -> SimConfig {
        SimConfig::new(Style::Blitz, seed)
    }
}

impl Default for SimConfig {
    /// Human style, seed 0.
    fn default() -> Self {
        SimConfig::new(Style::Human, 0)
    }
}

/// A synthesised capture with what happened physically (for tests that need the truth).
#[derive(Debug, Clone)]
pub struct Synthesis {
    /// The capture records, in time order.
    pub records: Vec<Record>,
    /// Per ply: hand order, slide squares, times.
    pub plies: Vec<PlyTrace>,
    /// Whether White's clock face was the right one.
    pub white_on_right: bool,
}

/// The DGT field index of `sq` (`0` = a8 … `63` = h1 on a normal board; `63 −` that when the
/// board is turned round).
pub fn field_index(sq: Square, reversed: bool) -> u8 {
    let normal = (7 - u32::from(sq.rank())) * 8 + u32::from(sq.file());
    (if reversed { 63 - normal } else { normal }) as u8
}

/// The capture of `game` played on a DGT board with a DGT 3000 clock.
pub fn synthesize(game: &ScriptGame, cfg: &SimConfig) -> Vec<Record> {
    synthesize_game(game, cfg).records
}

/// The capture of `moves` played from `start` (random think times). `mode` is the castling
/// mode the moves were generated in; castling moves are handled the same in both modes.
pub fn synthesize_moves(
    start: &Chess,
    mode: CastlingMode,
    moves: &[Move],
    cfg: &SimConfig,
) -> Vec<Record> {
    let _ = mode;
    simulate(start, moves, &[], None, cfg).records
}

/// [`synthesize`] with the physical truth.
pub fn synthesize_game(game: &ScriptGame, cfg: &SimConfig) -> Synthesis {
    simulate(
        &game.start,
        &game.moves,
        &game.clocks,
        game.time_control(),
        cfg,
    )
}

/// The full pipeline. `clocks` are `[%clk]` times after each move (ms) and `tc` the PGN time
/// control (base, increment in ms), used to derive think times; moves must be legal.
pub fn simulate(
    start: &Chess,
    moves: &[Move],
    clocks: &[Option<u32>],
    tc: Option<(u32, u32)>,
    cfg: &SimConfig,
) -> Synthesis {
    let mut r_game = Rng::derive(cfg.seed, 5);
    let mut r_scan = Rng::derive(cfg.seed, 6);
    let white_on_right = cfg.white_on_right.unwrap_or_else(|| r_game.chance(0.5));
    let ticks = cfg
        .clock_ticks
        .unwrap_or_else(|| cfg.style != Style::Clean && r_game.chance(0.25));
    let mut tl = timeline::build(start, moves, clocks, tc, cfg);
    tl.events.sort_by_key(|e| e.t);
    tl.glitches.sort_by_key(|g| g.t);

    // Everything the board sends, as (time, message); sorted stably by time at the end.
    let mut out: Vec<(Micros, DgtMessage)> = Vec::new();
    let reports = match cfg.style {
        Style::Clean => scan::immediate(start.board(), &tl.events, &tl.glitches, 220_000),
        _ => scan::scan(
            start.board(),
            &tl.events,
            &tl.glitches,
            tl.clock_start,
            tl.end,
            ScanTiming::default(),
            &mut r_scan,
        ),
    };
    for r in reports {
        out.push((
            r.t,
            DgtMessage::FieldUpdate {
                index: field_index(r.square, cfg.reversed_board),
                reading: r.reading,
            },
        ));
    }
    let mut clk = Dgt3000::new(ClockConfig {
        base_ms: cfg.base_ms,
        increment_ms: cfg.increment_ms,
        white_on_right,
    });
    let mut last = tl.clock_start;
    out.push((last, DgtMessage::ClockTimes(clk.start(last, start.turn()))));
    let presses = tl.plies.iter().filter_map(|p| p.press);
    for press in presses.map(Some).chain([None]) {
        let until = press.unwrap_or(tl.end);
        if ticks {
            let mut t = last + 1_000_000;
            while t < until {
                out.push((t, DgtMessage::ClockTimes(clk.reading(t))));
                t += 1_000_000;
            }
        }
        if let Some(p) = press {
            out.push((p, DgtMessage::ClockTimes(clk.press(p))));
            last = p;
        }
    }
    let records = capture_records(start, cfg, out);
    Synthesis {
        records,
        plies: tl.plies,
        white_on_right,
    }
}

/// A whole capture file (`eboard-capture` v1, written with [`CaptureWriter`]): header line,
/// then one JSON line per record with `t` in seconds (6 decimals) and bytes in lowercase hex.
pub fn capture_text(records: &[Record]) -> String {
    let mut header = serde_json::Map::new();
    header.insert("created".into(), "2026-11-29T10:00:00Z".into());
    header.insert("note".into(), "synthesised by eboardd sim".into());
    let mut w = CaptureWriter::new(Vec::new(), header).expect("writing to memory");
    for r in records {
        w.write_record(r).expect("writing to memory");
    }
    String::from_utf8(w.into_inner()).expect("capture lines are UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_follow_clk_comments() {
        let pgn = "[TimeControl \"15 min + 10 s\"]\n\n1. e4 {[%clk 0:14:40]} e5 {[%clk 0:15:05]} \
                   2. Nf3 {[%clk 0:13:50]} Nc6 {[%clk 0:15:00]} 3. Bb5 *";
        let game = pgn::parse_games(pgn).remove(0).unwrap();
        for style in [Style::Clean, Style::Human, Style::Blitz] {
            let s = synthesize_game(&game, &SimConfig::new(style, 3));
            let presses: Vec<Micros> = s.plies.iter().map(|p| p.press.unwrap()).collect();
            // 30 s, 5 s, 60 s, 15 s.
            let clock_start = presses[0] - 30_000_000;
            assert!((1_000_000..=5_000_000).contains(&clock_start));
            assert_eq!(presses[2] - presses[0], 65_000_000);
            assert_eq!(presses[3] - presses[1], 60_000_000 + 15_000_000);
        }
    }
}
