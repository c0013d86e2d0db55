//! Corpus accuracy ("How it is judged"): captures synthesised from real PGN games, replayed
//! through the whole pipeline (DGT decoding → core → game record), give exactly the moves played.
//!
//! The replayed game's SAN list (`GameRecord.moves[].san`) is compared with the SAN of the
//! game's moves computed with shakmaty from the [`ScriptGame`]. Thresholds:
//!
//! - Clean style: 100% of the sampled standard games;
//! - Human and Blitz styles (scanning board: out-of-order reports within a scan, direct
//!   replacement captures, slides, sensor glitches, clock press before the last update):
//!   at least 99.5% of the sampled standard games;
//! - Chess960: 100% of the 382 games of `tests/data/pgn/chess960`, human style;
//! - reversed board (connector on White's right): 100% (standard sample, every set-up
//!   position, Chess960 sample), apart from the known limitation below.
//!
//! The standard corpus is sampled deterministically (every 9th game, three seed rounds per
//! style, about 420 games per style) so that the file runs in seconds in release mode; the
//! ignored test `whole_corpus_every_style` plays every game in every style. Each test prints
//! `N/M exact` and lists failing games (file, game number in the file from 1, seed, first
//! differing ply) in its assertion message.
//!
//! [`PLAYED_ON_PAST_AUTOMATIC_DRAW`]: the corpus games that go on after a position the Laws
//! declare drawn (dead position, fivefold repetition) must replay to every move played too, in
//! every style.
//!
//! [`KNOWN_REVERSED_SETUP_MISREAD`]: room for set-up games on a reversed board that a regression
//! reads rotated (a first piece move is as legal either way round); empty now that the core
//! judges the orientation of a set-up position from where the pawns and kings stand.

mod support;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::OnceLock;

use eboardd::capture::Record;
use eboardd::core::event::CoreEvent;
use eboardd::replay::{Playback, Timeline};
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{SimConfig, Style, synthesize};
use pgn_reader::{Reader, SanPlus as PgnSan, Visitor};
use shakmaty::san::SanPlus;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{EnPassantMode, Position};

/// Games of the corpus that go on after a position ending the game at once under the Laws:
/// (file under `tests/data/pgn`, game number in the file from 1, ply after which the game is
/// over, why). Checked against the corpus by `games_played_on_past_an_automatic_draw_are_exact`.
const PLAYED_ON_PAST_AUTOMATIC_DRAW: &[(&str, usize, usize, &str)] = &[
    ("standard/gnuchess-book_public.pgn", 1229, 75, "fivefold"),
    (
        "standard/gnuchess-book_public.pgn",
        1381,
        152,
        "insufficient material",
    ),
    (
        "standard/gnuchess-book_public.pgn",
        2455,
        253,
        "insufficient material",
    ),
    ("standard/pychess_world_matches.pgn", 259, 75, "fivefold"),
    ("standard/pychess_world_matches.pgn", 267, 144, "fivefold"),
];

/// Known limitation: set-up positions read rotated on a reversed board (file, game number).
/// Empty since the orientation of a set-up position is judged from where the pawns and kings
/// stand; kept so that a regression can be listed here while it is being fixed.
const KNOWN_REVERSED_SETUP_MISREAD: &[(&str, usize)] = &[];

/// One corpus game with where it comes from.
struct CorpusGame {
    /// File name relative to `tests/data/pgn`.
    file: String,
    /// Game number in the file, from 1 (counting games without moves too).
    number: usize,
    game: ScriptGame,
    /// The SAN of every move, with check and mate suffixes.
    sans: Vec<String>,
    /// Known limitation: read rotated when set up on a reversed board.
    known_reversed_misread: bool,
}

impl CorpusGame {
    /// Starts from a position that is neither the standard nor a Chess960 start.
    fn is_setup_position(&self) -> bool {
        !self.game.is_chess960() && self.game.tag("FEN").is_some()
    }
}

/// Per game of a PGN file, in file order: whether it has main-line moves (the simulator's
/// parser skips games without moves; this gives the real game numbers back).
struct HasMoves;

impl Visitor for HasMoves {
    type Tags = ();
    type Movetext = bool;
    type Output = bool;

    fn begin_tags(&mut self) -> ControlFlow<bool, ()> {
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, _: ()) -> ControlFlow<bool, bool> {
        ControlFlow::Continue(false)
    }

    fn san(&mut self, any: &mut bool, _: PgnSan) -> ControlFlow<bool> {
        *any = true;
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, any: bool) -> bool {
        any
    }
}

fn game_numbers(pgn: &[u8]) -> Vec<usize> {
    let mut reader = Reader::new(std::io::Cursor::new(pgn));
    let mut numbers = Vec::new();
    let mut n = 0;
    while let Some(has_moves) = reader.read_game(&mut HasMoves).expect("PGN") {
        n += 1;
        if has_moves {
            numbers.push(n);
        }
    }
    numbers
}

fn sans_of(game: &ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// The first ply before the last one after which the game is over at once by rule (checkmate,
/// stalemate, dead position by insufficient material, fivefold repetition, 75 moves), computed
/// with shakmaty alone (independently of the core's rules).
fn automatic_end(game: &ScriptGame) -> Option<(usize, &'static str)> {
    let key = |p: &shakmaty::Chess| -> u64 {
        let z: Zobrist64 = p.zobrist_hash(EnPassantMode::Legal);
        z.0
    };
    let mut pos = game.start.clone();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    *seen.entry(key(&pos)).or_default() += 1;
    for (i, m) in game.moves.iter().enumerate() {
        if pos.is_irreversible(*m) {
            seen.clear();
        }
        pos.play_unchecked(*m);
        let reps = seen.entry(key(&pos)).or_default();
        *reps += 1;
        if i + 1 == game.moves.len() {
            break;
        }
        let why = if pos.is_checkmate() {
            "checkmate"
        } else if pos.is_stalemate() {
            "stalemate"
        } else if pos.is_insufficient_material() {
            "insufficient material"
        } else if *reps >= 5 {
            "fivefold"
        } else if pos.halfmoves() >= 150 {
            "seventy-five moves"
        } else {
            continue;
        };
        return Some((i + 1, why));
    }
    None
}

fn load(sub: &str) -> Vec<CorpusGame> {
    let root = support::pgn_dir();
    let mut out = Vec::new();
    for f in support::pgn_files(&root.join(sub)) {
        let name = f
            .strip_prefix(&root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{name}: {e}"));
        let numbers = game_numbers(&bytes);
        let games = parse_games_bytes(&bytes);
        assert_eq!(numbers.len(), games.len(), "{name}: games with moves");
        for (g, number) in games.into_iter().zip(numbers) {
            let game = g.unwrap_or_else(|e| panic!("{name}: {e}"));
            let sans = sans_of(&game);
            let known_reversed_misread = KNOWN_REVERSED_SETUP_MISREAD
                .iter()
                .any(|&(f, n)| f == name && n == number);
            out.push(CorpusGame {
                file: name.clone(),
                number,
                game,
                sans,
                known_reversed_misread,
            });
        }
    }
    out
}

fn standard() -> &'static [CorpusGame] {
    static GAMES: OnceLock<Vec<CorpusGame>> = OnceLock::new();
    GAMES.get_or_init(|| {
        let g = load("standard");
        assert!(g.len() > 3700, "standard corpus: {} games", g.len());
        g
    })
}

fn chess960() -> &'static [CorpusGame] {
    static GAMES: OnceLock<Vec<CorpusGame>> = OnceLock::new();
    GAMES.get_or_init(|| load("chess960"))
}

/// Replays a synthesised capture and returns the SAN list of every game the board recorded.
fn replay(records: Vec<Record>) -> Vec<Vec<String>> {
    let mut sink = |_: &str, _: &CoreEvent| Ok(());
    let session = Playback::play(Timeline::from_records(records), &mut sink)
        .expect("replay of a synthesised capture");
    session
        .devices()
        .flat_map(|d| d.engine.games())
        .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
        .collect()
}

/// How one replay went.
enum Outcome {
    Exact,
    /// Not exact, a known limitation.
    Known,
    Failed(String),
}

fn check(g: &CorpusGame, cfg: &SimConfig) -> Outcome {
    let games = replay(synthesize(&g.game, cfg));
    let what = format!(
        "{} game {} (seed {}, {:?}{})",
        g.file,
        g.number,
        cfg.seed,
        cfg.style,
        if cfg.reversed_board { ", reversed" } else { "" }
    );
    if games.len() == 1 && games[0] == g.sans {
        return Outcome::Exact;
    }
    if cfg.reversed_board && g.known_reversed_misread {
        return Outcome::Known;
    }
    let [got] = games.as_slice() else {
        let plies: Vec<usize> = games.iter().map(Vec::len).collect();
        return Outcome::Failed(format!(
            "{what}: {} games recorded (plies {plies:?}), expected one of {} plies",
            games.len(),
            g.sans.len()
        ));
    };
    let ply = got
        .iter()
        .zip(&g.sans)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(g.sans.len()));
    Outcome::Failed(format!(
        "{what}: first difference at ply {} (expected {}, got {}); {} plies expected, {} replayed",
        ply + 1,
        g.sans.get(ply).map_or("end of game", String::as_str),
        got.get(ply).map_or("end of game", String::as_str),
        g.sans.len(),
        got.len()
    ))
}

/// Counts of a batch.
#[derive(Default)]
struct Tally {
    exact: usize,
    known: usize,
    total: usize,
    failures: Vec<String>,
}

fn run<'a>(cases: impl Iterator<Item = (&'a CorpusGame, SimConfig)>) -> Tally {
    let mut t = Tally::default();
    for (g, cfg) in cases {
        t.total += 1;
        match check(g, &cfg) {
            Outcome::Exact => t.exact += 1,
            Outcome::Known => t.known += 1,
            Outcome::Failed(f) => t.failures.push(f),
        }
    }
    t
}

/// Prints the counts and asserts that at least `min_percent` of the games passed (exact, or a
/// known limitation).
fn judge(what: &str, t: Tally, min_percent: f64) {
    let passed = t.exact + t.known;
    let percent = 100.0 * passed as f64 / t.total.max(1) as f64;
    let exact_percent = 100.0 * t.exact as f64 / t.total.max(1) as f64;
    let summary = format!(
        "{what}: {}/{} exact ({exact_percent:.2}%), {} known limitation, {} failed; \
         {percent:.2}% passed, need {min_percent}%",
        t.exact,
        t.total,
        t.known,
        t.failures.len()
    );
    println!("{summary}");
    for f in &t.failures {
        println!("  {f}");
    }
    assert!(t.total > 0, "{what}: no games");
    assert!(
        percent >= min_percent,
        "{summary}; failing games:\n{}",
        t.failures.join("\n")
    );
}

/// Standard games sampled for one style: in each of `ROUNDS` rounds (each with its own seeds)
/// every `STEP * ROUNDS`-th game from a round offset; about 420 distinct games per style.
const STEP: usize = 9;
const ROUNDS: usize = 3;

fn standard_sample(
    style: Style,
    salt: u64,
) -> impl Iterator<Item = (&'static CorpusGame, SimConfig)> {
    let games = standard();
    (0..ROUNDS).flat_map(move |round| {
        let offset = (round * STEP / ROUNDS + salt as usize) % STEP;
        games
            .iter()
            .enumerate()
            .skip(offset)
            .step_by(STEP * ROUNDS)
            .map(move |(i, g)| {
                let seed = salt * 1_000_000 + round as u64 * 100_000 + i as u64;
                (g, SimConfig::new(style, seed))
            })
    })
}

/// The games that go on after a position the Laws declare drawn are exactly the listed ones,
/// and they replay to every move played, in every style and several seeds.
#[test]
fn games_played_on_past_an_automatic_draw_are_exact() {
    let found: Vec<(String, usize, usize, &str)> = standard()
        .iter()
        .chain(chess960())
        .filter_map(|g| {
            automatic_end(&g.game).map(|(ply, why)| (g.file.clone(), g.number, ply, why))
        })
        .collect();
    let listed: Vec<(String, usize, usize, &str)> = PLAYED_ON_PAST_AUTOMATIC_DRAW
        .iter()
        .map(|&(f, n, p, w)| (f.to_owned(), n, p, w))
        .collect();
    assert_eq!(found, listed);
    let games: Vec<&CorpusGame> = standard()
        .iter()
        .filter(|g| listed.iter().any(|l| l.0 == g.file && l.1 == g.number))
        .collect();
    let cases = games.iter().flat_map(|&g| {
        [Style::Clean, Style::Human, Style::Blitz]
            .into_iter()
            .flat_map(move |style| (0..3).map(move |k| (g, SimConfig::new(style, 8_000 + k))))
    });
    judge("played on past an automatic draw", run(cases), 100.0);
}

#[test]
fn clean_style_is_exact() {
    judge("clean", run(standard_sample(Style::Clean, 1)), 100.0);
}

#[test]
fn human_style_is_at_least_99_5_percent_exact() {
    judge("human", run(standard_sample(Style::Human, 2)), 99.5);
}

#[test]
fn blitz_style_is_at_least_99_5_percent_exact() {
    judge("blitz", run(standard_sample(Style::Blitz, 4)), 99.5);
}

#[test]
fn every_chess960_game_is_exact() {
    let games = chess960();
    assert_eq!(games.len(), 382, "chess960 corpus");
    assert!(games.iter().all(|g| g.game.is_chess960()));
    let cases = games
        .iter()
        .enumerate()
        .map(|(i, g)| (g, SimConfig::human(9_600_000 + i as u64)));
    judge("chess960 (human)", run(cases), 100.0);
}

#[test]
fn reversed_board_is_exact() {
    let styles = [Style::Clean, Style::Human, Style::Blitz];
    let reversed = |style: Style, seed: u64| SimConfig {
        reversed_board: true,
        ..SimConfig::new(style, seed)
    };
    // A sample of the standard games, and every set-up position.
    let std_cases = standard()
        .iter()
        .enumerate()
        .filter(|(i, g)| i % 19 == 5 || g.is_setup_position())
        .map(|(i, g)| (g, reversed(styles[i % 3], 7_000_000 + i as u64)));
    let c960_cases = chess960()
        .iter()
        .enumerate()
        .step_by(5)
        .map(|(i, g)| (g, reversed(styles[i % 3], 7_960_000 + i as u64)));
    judge("reversed board", run(std_cases.chain(c960_cases)), 100.0);
}

/// Every game of the corpus in every style (with a reversed board for one game in five):
/// about 12,500 replays, some 10 s in release mode. The environment
/// variable `CORPUS_SEED` (default 0) changes every seed.
#[test]
#[ignore = "whole corpus; run with --ignored"]
fn whole_corpus_every_style() {
    let base: u64 = std::env::var("CORPUS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for (style, min) in [
        (Style::Clean, 100.0),
        (Style::Human, 99.5),
        (Style::Blitz, 99.5),
    ] {
        let cases = standard()
            .iter()
            .chain(chess960())
            .enumerate()
            .map(|(i, g)| {
                let cfg = SimConfig {
                    reversed_board: i % 5 == 2,
                    ..SimConfig::new(style, (base + 50) * 1_000_000 + i as u64)
                };
                (g, cfg)
            });
        judge(&format!("whole corpus, {style:?}"), run(cases), min);
    }
}

// ---------------------------------------------------------------------------------------------
// The clock as the core reads it (issue 9): colours named in `clock` events and `[%clk]` of
// each move, against the truth taken straight from the synthesised bytes.

/// Clock figures of a batch.
#[derive(Default, Debug)]
struct ClockTally {
    /// `clock` events of a running clock, and those naming the colour whose face runs.
    named: usize,
    named_right: usize,
    /// Moves completed by a press in the simulation, and those whose recorded clock is within
    /// a second of the mover's face in the press message.
    clk: usize,
    clk_right: usize,
    failures: Vec<String>,
}

/// BWTIME clock messages of the capture, straight from the bytes: (t, left s, right s, status).
fn raw_clock(records: &[Record]) -> Vec<(i64, u32, u32, u8)> {
    let bcd = |b: u8| u32::from(b >> 4) * 10 + u32::from(b & 0x0F);
    let secs = |f: &[u8]| u32::from(f[0] & 0x0F) * 3600 + bcd(f[1]) * 60 + bcd(f[2]);
    let mut out = Vec::new();
    for r in records {
        let eboardd::capture::RecordKind::Rx(bytes) = &r.kind else {
            continue;
        };
        for i in 0..bytes.len().saturating_sub(9) {
            if bytes[i..i + 3] == [0x8D, 0x00, 0x0A] && bytes[i + 9] & 0x20 == 0 {
                let p = &bytes[i + 3..i + 10];
                if p[0] & 0x0F == 0x0A || p[3] & 0x0F == 0x0A {
                    continue; // a clock ack
                }
                out.push((r.t, secs(&p[3..6]), secs(&p[0..3]), p[6]));
            }
        }
    }
    out
}

fn clock_check(g: &CorpusGame, cfg: &SimConfig, tally: &mut ClockTally) {
    let synth = eboardd::sim::synthesize_game(&g.game, cfg);
    let raw = raw_clock(&synth.records);
    let mut events: Vec<CoreEvent> = Vec::new();
    let mut sink = |_: &str, e: &CoreEvent| {
        events.push(e.clone());
        Ok(())
    };
    let session =
        Playback::play(Timeline::from_records(synth.records.clone()), &mut sink).expect("replay");
    // The colour of a face: White's face is the right one when `white_on_right`.
    let colour_of_right = |right: bool| {
        if right == synth.white_on_right {
            "white"
        } else {
            "black"
        }
    };
    for e in &events {
        let eboardd::core::event::EventKind::Clock { running, .. } = e.kind else {
            continue;
        };
        // The reading that caused the event: the last one at or before its time.
        let Some(&(_, _, _, status)) = raw.iter().rev().find(|r| r.0 <= e.t) else {
            continue;
        };
        if status & 0x01 == 0 {
            continue;
        }
        tally.named += 1;
        if running.map(eboardd::core::vocab::color_name)
            == Some(colour_of_right(status & 0x02 != 0))
        {
            tally.named_right += 1;
        }
    }
    let Some(game) = session.devices().flat_map(|d| d.engine.games()).last() else {
        return;
    };
    let mut wrong = 0;
    for trace in &synth.plies {
        let Some(tp) = trace.press else { continue };
        let Some(&(_, left, right, status)) = raw.iter().find(|r| r.0 == tp) else {
            continue;
        };
        // The press message: the face that stopped is the mover's.
        let mover_on_right = status & 0x02 == 0;
        let want = if mover_on_right { right } else { left };
        let mover = if colour_of_right(mover_on_right) == "white" {
            shakmaty::Color::White
        } else {
            shakmaty::Color::Black
        };
        tally.clk += 1;
        let got = game
            .moves
            .get(trace.ply - 1)
            .and_then(|m| m.mover_clock(mover))
            .map(|ms| ms / 1000);
        if got.is_some_and(|s| s.abs_diff(want) <= 1) {
            tally.clk_right += 1;
        } else {
            wrong += 1;
            if wrong == 1 {
                tally.failures.push(format!(
                    "{} game {} (seed {}, {:?}): ply {} [%clk] {got:?} s, the clock showed {want} s",
                    g.file, g.number, cfg.seed, cfg.style, trace.ply
                ));
            }
        }
    }
}

fn judge_clock<'a>(what: &str, cases: impl Iterator<Item = (&'a CorpusGame, SimConfig)>) {
    let mut t = ClockTally::default();
    for (g, cfg) in cases {
        clock_check(g, &cfg, &mut t);
    }
    let named = 100.0 * t.named_right as f64 / t.named.max(1) as f64;
    let clk = 100.0 * t.clk_right as f64 / t.clk.max(1) as f64;
    let summary = format!(
        "{what}: clock events naming the running colour {}/{} ({named:.2}%), \
         [%clk] within 1 s {}/{} ({clk:.2}%)",
        t.named_right, t.named, t.clk_right, t.clk
    );
    println!("{summary}");
    for f in &t.failures {
        println!("  {f}");
    }
    assert!(t.named > 1000 && t.clk > 1000, "{summary}");
    assert!(
        named >= 99.0 && clk >= 99.0,
        "{summary}; first failures:\n{}",
        t.failures[..t.failures.len().min(10)].join("\n")
    );
}

#[test]
fn clock_colours_and_clk_per_style() {
    judge_clock("clean", standard_sample(Style::Clean, 11).step_by(4));
    judge_clock("human", standard_sample(Style::Human, 12).step_by(4));
    judge_clock("blitz", standard_sample(Style::Blitz, 14).step_by(4));
    let c960 = chess960()
        .iter()
        .enumerate()
        .step_by(4)
        .map(|(i, g)| (g, SimConfig::human(9_700_000 + i as u64)));
    judge_clock("chess960 (human)", c960);
}

/// "No alarm over 800 ordinary games": games played without any irregularity (human and blitz
/// handling, scanning board, sensor glitches, every capture order) raise none. The simulated
/// handling castles rook first now and then, which is a real 4.4b: that one is allowed, at a
/// castling ply only.
#[test]
fn ordinary_games_raise_no_alarm() {
    use eboardd::core::event::EventKind;
    use eboardd::core::vocab::IrregularityCode;
    let cases: Vec<(&CorpusGame, SimConfig)> = standard_sample(Style::Human, 11)
        .take(400)
        .chain(standard_sample(Style::Blitz, 12).take(400))
        .collect();
    assert_eq!(cases.len(), 800, "the sample");
    let mut alarms = Vec::new();
    for (g, cfg) in &cases {
        let mut raised = Vec::new();
        let castles = |ply: u32| {
            g.game
                .moves
                .get(ply as usize - 1)
                .is_some_and(|m| m.is_castle())
        };
        let mut sink = |_: &str, e: &CoreEvent| {
            if let EventKind::Irregularity { code, ply, .. } = &e.kind {
                let rook_first = *code == IrregularityCode::CastlingRookTouchedFirst;
                if !(rook_first && *ply >= 1 && castles(*ply)) {
                    raised.push(format!("{code:?}@{ply}"));
                }
            }
            Ok(())
        };
        Playback::play(Timeline::from_records(synthesize(&g.game, cfg)), &mut sink)
            .expect("replay of a synthesised capture");
        if !raised.is_empty() {
            alarms.push(format!(
                "{} game {} (seed {}, {:?}): {raised:?}",
                g.file, g.number, cfg.seed, cfg.style
            ));
        }
    }
    assert!(
        alarms.is_empty(),
        "{} of 800 ordinary games raised alarms:\n{}",
        alarms.len(),
        alarms.join("\n")
    );
}
