//! Moves recovered from the board's own memory (`Observation::Memory`, `docs/events.md`): a
//! live engine that saw a game up to some point, then the board's memory of everything it
//! sensed (synthesised from the same capture with `eboardd::sim::memory`) and the board dump of
//! the final position, as the daemon feeds them after the link was away.
//!
//! The truth is the PGN game the capture was synthesised from (SAN with shakmaty, the clock
//! times from the simulated clock's reading at each press). Each scenario checks that the moves
//! beyond the live record come back exactly, in order, marked `recovered`, with the clock of
//! their press when White's clock side is known, and that the dump then raises nothing; or,
//! when the memory cannot tell (another game, a memory without the game's start, `Unknown` at
//! the end, no live game), that nothing is recovered and the events are exactly those of the
//! same live engine fed the dump alone (the gap search, unchanged).

mod support;

use eboardd::capture::{OpRecord, Record, RecordKind};
use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::{ClockTimes, CompletedBy, CoreEvent, EventEnvelope, EventKind};
use eboardd::core::observation::{
    ClockSide, FieldArray, MemoryEntry, Micros, Observation, OperatorAction, SquareReading,
};
use eboardd::core::vocab::IrregularityCode;
use eboardd::device::{Device, apply_record};
use eboardd::driver::dgt::{DgtDecoder, DgtMessage};
use eboardd::sim::memory::{memory_of, memory_of_overwriting};
use eboardd::sim::pgn::ScriptGame;
use eboardd::sim::rng::Rng;
use eboardd::sim::{SimConfig, Style, Synthesis, field_index, simulate, synthesize_game};
use proptest::prelude::*;
use shakmaty::san::{San, SanPlus};
use shakmaty::{CastlingMode, Chess, Move, Position};

const SEC: Micros = 1_000_000;

/// Where the live engine lost the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// After ply `k` was pressed, before the next move's first action (k = 0: before the
    /// first move).
    AfterPress(usize),
    /// After ply `k` was made, before its press.
    BeforePress(usize),
    /// In the middle of ply `k`'s hand actions (k ≥ 1).
    MidMove(usize),
}

impl Cut {
    fn time(self, s: &Synthesis) -> Micros {
        match self {
            Cut::AfterPress(0) => s.plies[0].first_action,
            Cut::AfterPress(k) => s.plies.get(k).map_or(Micros::MAX, |p| p.first_action),
            Cut::BeforePress(k) => {
                let p = &s.plies[k - 1];
                p.press.unwrap_or(p.last_action + 300_000)
            }
            Cut::MidMove(k) => {
                let p = &s.plies[k - 1];
                (p.first_action + p.last_action) / 2
            }
        }
    }
}

fn sans(start: &Chess, moves: &[Move]) -> Vec<String> {
    let mut pos = start.clone();
    moves
        .iter()
        .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// The board at the end of `moves` from `start`, in device numbering.
fn final_fields(start: &Chess, moves: &[Move], reversed: bool) -> Box<FieldArray> {
    let mut pos = start.clone();
    for m in moves {
        pos.play_unchecked(*m);
    }
    let mut f = [SquareReading::Empty; 64];
    for (sq, p) in pos.board().iter() {
        f[usize::from(field_index(sq, reversed))] = SquareReading::Piece(p);
    }
    Box::new(f)
}

/// Per ply: both clocks as the simulated clock showed them right after the ply's press.
fn truth_clocks(s: &Synthesis) -> Vec<Option<ClockTimes>> {
    s.plies
        .iter()
        .map(|p| {
            let t = p.press?;
            let r = s.records.iter().find_map(|r| match &r.kind {
                RecordKind::Rx(bytes) if r.t == t => {
                    let mut msgs = Vec::new();
                    DgtDecoder::new().decode(bytes, &mut msgs);
                    msgs.into_iter().find_map(|m| match m {
                        DgtMessage::ClockTimes(c) => Some(c),
                        _ => None,
                    })
                }
                _ => None,
            })?;
            let (white, black) = if s.white_on_right {
                (r.right.millis, r.left.millis)
            } else {
                (r.left.millis, r.right.millis)
            };
            Some(ClockTimes { white, black })
        })
        .collect()
}

/// A live device fed every record before `cut`.
fn live(records: &[Record], cut: Micros, cfg: &EngineConfig) -> (Device, Micros) {
    let mut dev = Device::new("board-1", cfg.clone());
    let mut out = Vec::new();
    let mut last = 0;
    for r in records.iter().filter(|r| r.t < cut) {
        apply_record(&mut dev, r.t, &r.kind, &mut out);
        last = r.t;
    }
    (dev, last)
}

/// The reconnection: the memory (if any) at `t`, the dump 20 ms later, then the end of input.
fn reconnect(
    engine: &mut BoardEngine,
    t: Micros,
    memory: Option<Vec<MemoryEntry>>,
    dump: &FieldArray,
) -> Vec<CoreEvent> {
    let mut out = Vec::new();
    if let Some(m) = memory {
        engine.handle(t, &Observation::Memory(m), &mut out);
    }
    engine.handle(
        t + 20_000,
        &Observation::BoardDump(Box::new(*dump)),
        &mut out,
    );
    engine.finish(t + 20_000, &mut out);
    out
}

fn irregularities(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Irregularity { code, ply, .. } => Some(format!("{code}@{ply}")),
            _ => None,
        })
        .collect()
}

fn wire(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| EventEnvelope::new(i as u64 + 1, "board-1", e).to_json())
        .collect()
}

/// What one recovery scenario gave.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    cases: usize,
    recovered: usize,
    clocks: usize,
    changed: usize,
    confirmed: usize,
    no_game: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.cases += o.cases;
        self.recovered += o.recovered;
        self.clocks += o.clocks;
        self.changed += o.changed;
        self.confirmed += o.confirmed;
        self.no_game += o.no_game;
    }
}

/// Live up to `cut`, then the memory of the whole capture and the final dump: the rest of the
/// game must come back exactly. `fixed_side`: White's clock side is configured (so every
/// recovered move pressed after an opponent's press must carry its clock).
fn recovers(
    start: &Chess,
    moves: &[Move],
    s: &Synthesis,
    reversed: bool,
    cut: Cut,
    fixed_side: bool,
) -> Result<Tally, String> {
    let truth = sans(start, moves);
    let clocks = truth_clocks(s);
    let white_side = if s.white_on_right {
        ClockSide::Right
    } else {
        ClockSide::Left
    };
    let cfg = EngineConfig {
        white_clock_side: fixed_side.then_some(white_side),
        ..EngineConfig::default()
    };
    let (mut dev, last) = live(&s.records, cut.time(s), &cfg);
    let t = s.records.last().map_or(last, |r| r.t) + 2 * SEC;
    let dump = final_fields(start, moves, reversed);
    let Some(game) = dev.engine.games().last() else {
        // A set-up position is a game only once its first move is made: no game is made from
        // the memory, the dump goes where it goes without it.
        let (mut twin, _) = live(&s.records, cut.time(s), &cfg);
        let a = reconnect(&mut dev.engine, t, Some(memory_of(&s.records)), &dump);
        let b = reconnect(&mut twin.engine, t, None, &dump);
        if wire(&a) != wire(&b) {
            return Err(format!(
                "{cut:?}: no live game, and the memory changed the events"
            ));
        }
        return Ok(Tally {
            cases: 1,
            no_game: 1,
            ..Tally::default()
        });
    };
    let seen: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
    let k = seen.len();
    let uncompleted = game.uncompleted_last().is_some();
    if seen.iter().zip(&truth).take_while(|(a, b)| a == b).count() + usize::from(uncompleted) < k {
        return Err(format!(
            "the live engine misread the game before the cut: {seen:?}"
        ));
    }
    let changed = k > 0 && seen[k - 1] != truth[k - 1];
    let events = reconnect(&mut dev.engine, t, Some(memory_of(&s.records)), &dump);
    let record = dev.engine.games().last().ok_or("no game")?;
    let got: Vec<String> = record.moves.iter().map(|m| m.san.clone()).collect();
    if got != truth {
        return Err(format!(
            "{cut:?}: live {k} plies {}; recorded {got:?}, truth {truth:?}",
            if uncompleted {
                "(last uncompleted)"
            } else {
                ""
            }
        ));
    }
    let raised = irregularities(&events);
    if !raised.is_empty() {
        return Err(format!("{cut:?}: raised {raised:?}"));
    }
    let first_recovered = if changed { k } else { k + 1 };
    for (i, m) in record.moves.iter().enumerate() {
        let ply = i + 1;
        if m.recovered != (ply >= first_recovered) {
            return Err(format!(
                "{cut:?}: ply {ply} recovered = {} (live saw {k})",
                m.recovered
            ));
        }
    }
    let mut tally = Tally {
        cases: 1,
        recovered: truth.len() + 1 - first_recovered,
        changed: usize::from(changed),
        confirmed: usize::from(uncompleted && !changed),
        ..Tally::default()
    };
    // Every event after the memory is about the recovered moves (and the end of the game).
    for e in &events {
        match &e.kind {
            EventKind::MoveMade { ply, recovered, .. } => {
                if !recovered || (*ply as usize) < first_recovered {
                    return Err(format!("{cut:?}: {:?}", e.kind));
                }
            }
            EventKind::MoveRetracted { ply } if changed && *ply as usize == k => {}
            EventKind::MoveCompleted {
                ply,
                by,
                clock,
                recovered,
                ..
            } => {
                let ply = *ply as usize;
                if *recovered != (ply >= first_recovered) {
                    return Err(format!("{cut:?}: {:?}", e.kind));
                }
                match (by, clock) {
                    (CompletedBy::Clock, Some(c)) => {
                        if clocks[ply - 1] != Some(*c) {
                            return Err(format!(
                                "{cut:?}: ply {ply} clock {c:?}, truth {:?}",
                                clocks[ply - 1]
                            ));
                        }
                        tally.clocks += 1;
                    }
                    (_, Some(_)) if ply >= first_recovered => {
                        return Err(format!("{cut:?}: a recovered move's clock without a press"));
                    }
                    _ => {}
                }
            }
            EventKind::Clock { .. } | EventKind::GameEnded { .. } => {}
            EventKind::ClaimAvailable { .. } | EventKind::IrregularityResolved { .. } => {}
            other => return Err(format!("{cut:?}: unexpected {other:?}")),
        }
    }
    if fixed_side {
        // Known sides: every move pressed after a press of the opponent gets that press's clock.
        let from = if uncompleted && !changed {
            k
        } else {
            first_recovered
        };
        for (i, m) in record.moves.iter().enumerate().skip(from.max(2) - 1) {
            if let Some(truth) = clocks[i]
                && m.clock != Some(truth)
            {
                return Err(format!(
                    "{cut:?}: ply {} clock {:?}, truth {truth:?}",
                    i + 1,
                    m.clock
                ));
            }
        }
    }
    Ok(tally)
}

fn cuts(n: usize, salt: u64) -> Vec<Cut> {
    let many = n / 2 + (salt as usize % (n / 2).max(1));
    let mut out = vec![Cut::AfterPress(0)];
    if n > 4 {
        out.push(Cut::AfterPress(3));
        out.push(Cut::BeforePress(4));
    }
    if n > 2 {
        out.push(Cut::AfterPress(many.min(n - 1)));
        out.push(Cut::MidMove(many.min(n - 1).max(1)));
        out.push(Cut::BeforePress(many.min(n - 1).max(1)));
    }
    out
}

/// Every scenario of `games` in every style; failures listed.
fn corpus(games: &[&ScriptGame], styles: &[Style], reversed_every: usize) -> (Tally, Vec<String>) {
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (n, game) in games.iter().enumerate() {
        for (si, &style) in styles.iter().enumerate() {
            let seed = (n * 7 + si) as u64;
            let mut cfg = SimConfig::new(style, seed);
            cfg.reversed_board = reversed_every > 0 && n % reversed_every == 0;
            let s = synthesize_game(game, &cfg);
            for (ci, cut) in cuts(game.moves.len(), seed).into_iter().enumerate() {
                let fixed = ci % 2 == 1;
                match recovers(&game.start, &game.moves, &s, cfg.reversed_board, cut, fixed) {
                    Ok(t) => tally += t,
                    Err(e) => failures.push(format!(
                        "game {n} ({} {} – {}) {style:?} seed {seed}: {e}",
                        game.tag("Event").unwrap_or("?"),
                        game.tag("White").unwrap_or("?"),
                        game.tag("Black").unwrap_or("?"),
                    )),
                }
            }
        }
    }
    (tally, failures)
}

fn report(what: &str, tally: Tally, failures: &[String]) {
    println!(
        "{what}: {} scenarios ({} without a live game), {} plies recovered ({} with their clock), {} uncompleted live moves confirmed, {} changed, {} failures",
        tally.cases,
        tally.no_game,
        tally.recovered,
        tally.clocks,
        tally.confirmed,
        tally.changed,
        failures.len()
    );
}

#[test]
fn standard_games_come_back_exactly_in_every_style() {
    let all = support::games("standard");
    let games: Vec<&ScriptGame> = all.iter().step_by(53).collect();
    assert!(games.len() >= 70, "{} games", games.len());
    let (tally, failures) = corpus(&games, &[Style::Clean, Style::Human, Style::Blitz], 5);
    report("standard", tally, &failures);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(tally.changed > 0, "no live move was seen changed");
    assert!(
        tally.confirmed > 0,
        "no uncompleted live move was confirmed"
    );
    assert!(tally.clocks > tally.recovered / 2, "{tally:?}");
}

#[test]
fn chess960_games_come_back_exactly() {
    let all = support::games("chess960");
    let games: Vec<&ScriptGame> = all.iter().step_by(4).collect();
    assert!(games.len() >= 90, "{} games", games.len());
    assert!(games.iter().all(|g| g.is_chess960()));
    let (tally, failures) = corpus(&games, &[Style::Human], 7);
    report("chess960", tally, &failures);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A short corpus game in human style, with its capture.
fn sample(nth: usize, style: Style) -> (ScriptGame, SimConfig, Synthesis) {
    let all = support::corpus_file("standard/pychess_world_matches.pgn");
    let game = all
        .into_iter()
        .filter(|g| g.tag("FEN").is_none() && (30..=90).contains(&g.moves.len()))
        .nth(nth)
        .expect("a game");
    let cfg = SimConfig::new(style, nth as u64 + 11);
    let s = synthesize_game(&game, &cfg);
    (game, cfg, s)
}

#[test]
fn an_earlier_game_in_the_memory_is_not_taken_for_this_one() {
    let (_, _, sa) = sample(0, Style::Human);
    let (b, cfg, sb) = sample(1, Style::Human);
    for k in [0, 1, 6, b.moves.len() / 2] {
        let (mut dev, _) = live(
            &sb.records,
            Cut::AfterPress(k).time(&sb),
            &EngineConfig::default(),
        );
        let mut memory = memory_of(&sa.records);
        memory.extend(memory_of(&sb.records));
        let t = sb.records.last().expect("records").t + 2 * SEC;
        let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
        let events = reconnect(&mut dev.engine, t, Some(memory), &dump);
        let games = dev.engine.games();
        assert_eq!(games.len(), 1, "k = {k}");
        let got: Vec<String> = games[0].moves.iter().map(|m| m.san.clone()).collect();
        assert_eq!(got, sans(&b.start, &b.moves), "k = {k}");
        assert!(irregularities(&events).is_empty(), "k = {k}");
        let recovered = games[0].moves.iter().filter(|m| m.recovered).count();
        assert_eq!(recovered, b.moves.len() - k, "k = {k}");
    }
}

/// The same live engine twice: one fed `memory` and the dump, the other the dump alone.
fn same_as_without(records: &[Record], cut: Micros, memory: Vec<MemoryEntry>, dump: &FieldArray) {
    let cfg = EngineConfig::default();
    let (mut with, _) = live(records, cut, &cfg);
    let (mut without, _) = live(records, cut, &cfg);
    let t = records.last().expect("records").t + 2 * SEC;
    let a = reconnect(&mut with.engine, t, Some(memory), dump);
    let b = reconnect(&mut without.engine, t, None, dump);
    assert_eq!(wire(&a), wire(&b));
}

#[test]
fn a_memory_of_another_game_recovers_nothing() {
    let (a, _, sa) = sample(2, Style::Human);
    let (b, cfg, sb) = sample(3, Style::Blitz);
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    for k in [0, 2, 5, 20] {
        let cut = Cut::AfterPress(k).time(&sb);
        same_as_without(&sb.records, cut, memory_of(&sa.records), &dump);
    }
    assert!(a.tag("White") != b.tag("White") || a.moves != b.moves);
}

/// The first `k` moves of `game`, then `extra` plies of another continuation (the first legal
/// move in UCI order that is not the game's).
fn fork(game: &ScriptGame, k: usize, extra: usize) -> Vec<Move> {
    let mut pos = game.start.clone();
    let mut moves = game.moves[..k].to_vec();
    for m in &moves {
        pos.play_unchecked(*m);
    }
    for i in 0..extra {
        let mut legal: Vec<Move> = pos.legal_moves().into_iter().collect();
        legal.sort_by_key(|m| m.to_uci(CastlingMode::Standard).to_string());
        let Some(m) = legal
            .into_iter()
            .find(|m| i > 0 || game.moves.get(k) != Some(m))
        else {
            break;
        };
        pos.play_unchecked(m);
        moves.push(m);
    }
    moves
}

#[test]
fn a_memory_that_does_not_end_with_the_board_recovers_nothing() {
    // The memory holds the live game's first moves and another continuation; the board shows
    // the real game: the memory is not the board's history, nothing is taken from it.
    let (b, cfg, sb) = sample(4, Style::Human);
    let k = 8;
    let other = fork(&b, k, 6);
    let so = simulate(
        &b.start,
        &other,
        &[],
        None,
        &SimConfig::new(Style::Human, 99),
    );
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    same_as_without(
        &sb.records,
        Cut::AfterPress(k).time(&sb),
        memory_of(&so.records),
        &dump,
    );
    // Had the board shown that continuation, it would have been recovered.
    let (mut dev, _) = live(
        &sb.records,
        Cut::AfterPress(k).time(&sb),
        &EngineConfig::default(),
    );
    let t = sb.records.last().expect("records").t + 2 * SEC;
    let dump = final_fields(&b.start, &other, false);
    reconnect(&mut dev.engine, t, Some(memory_of(&so.records)), &dump);
    let got: Vec<String> = dev.engine.games()[0]
        .moves
        .iter()
        .map(|m| m.san.clone())
        .collect();
    assert_eq!(got, sans(&b.start, &other));
}

#[test]
fn unknown_before_the_start_is_skipped_and_after_it_recovers_nothing() {
    let (b, cfg, sb) = sample(5, Style::Human);
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    let k = 4;
    let cut = Cut::AfterPress(k).time(&sb);
    // Pieces in no known order before the game (a set-up, a mess), then the game.
    let mut memory = vec![
        MemoryEntry::Field {
            index: 12,
            reading: SquareReading::Empty,
            quick: false,
        },
        MemoryEntry::Unknown,
        MemoryEntry::Field {
            index: 30,
            reading: SquareReading::Empty,
            quick: true,
        },
        MemoryEntry::Press {
            side: ClockSide::Left,
            millis: 1000,
        },
    ];
    memory.extend(memory_of(&sb.records));
    let (mut dev, _) = live(&sb.records, cut, &EngineConfig::default());
    let t = sb.records.last().expect("records").t + 2 * SEC;
    let events = reconnect(&mut dev.engine, t, Some(memory), &dump);
    assert!(irregularities(&events).is_empty());
    let got: Vec<String> = dev.engine.games()[0]
        .moves
        .iter()
        .map(|m| m.san.clone())
        .collect();
    assert_eq!(got, sans(&b.start, &b.moves));
    // Unknown in the middle of the game and no anchor after it: the end is not known.
    let mut memory = memory_of(&sb.records);
    let at = memory.len() * 2 / 3;
    memory.insert(at, MemoryEntry::Unknown);
    same_as_without(&sb.records, cut, memory, &dump);
}

#[test]
fn a_memory_whose_start_was_overwritten_recovers_nothing() {
    let (b, cfg, sb) = sample(6, Style::Blitz);
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    let memory = memory_of(&sb.records);
    assert!(matches!(memory[0], MemoryEntry::Board(_)));
    for drop in [1, 2, 17, memory.len() / 2] {
        for k in [0, 3, 10] {
            let cut = Cut::AfterPress(k).time(&sb);
            same_as_without(&sb.records, cut, memory[drop..].to_vec(), &dump);
        }
    }
    // An empty memory is no memory.
    same_as_without(&sb.records, Cut::AfterPress(3).time(&sb), Vec::new(), &dump);
}

#[test]
fn no_game_is_created_from_a_memory_alone() {
    let (b, cfg, sb) = sample(7, Style::Human);
    assert!(b.moves.len() > 10);
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    let memory = memory_of(&sb.records);
    // No live game at all: the daemon started while the game was being played.
    let mut with = BoardEngine::new(EngineConfig::default());
    let mut without = BoardEngine::new(EngineConfig::default());
    let a = reconnect(&mut with, 10 * SEC, Some(memory.clone()), &dump);
    let b2 = reconnect(&mut without, 10 * SEC, None, &dump);
    assert_eq!(wire(&a), wire(&b2));
    assert!(with.games().is_empty());
    // The live game ended (resigned): the memory of what followed is not a game of its own.
    let cfg_e = EngineConfig::default();
    let cut = Cut::AfterPress(10).time(&sb);
    let mut records: Vec<Record> = sb.records.iter().filter(|r| r.t < cut).cloned().collect();
    records.push(Record {
        t: cut - 1,
        dev: "board-1".into(),
        kind: RecordKind::Op(OpRecord::Action(OperatorAction::SetResult {
            result: "1-0".into(),
        })),
    });
    let (mut with, _) = live(&records, Micros::MAX, &cfg_e);
    let (mut without, _) = live(&records, Micros::MAX, &cfg_e);
    assert!(with.engine.games()[0].ended());
    let plies = with.engine.games()[0].ply();
    let t = sb.records.last().expect("records").t + 2 * SEC;
    let a = reconnect(&mut with.engine, t, Some(memory), &dump);
    let b2 = reconnect(&mut without.engine, t, None, &dump);
    assert_eq!(wire(&a), wire(&b2));
    assert_eq!(with.engine.games().len(), 1);
    assert_eq!(with.engine.games()[0].ply(), plies);
}

/// Plays `sans` from the start.
fn moves_of(sans: &[&str]) -> Vec<Move> {
    let mut pos = Chess::default();
    sans.iter()
        .map(|s| {
            let m = s.parse::<San>().expect("SAN").to_move(&pos).expect("legal");
            pos.play_unchecked(m);
            m
        })
        .collect()
}

#[test]
fn an_open_moves_missing_is_resolved_by_the_memory() {
    let moves = moves_of(&["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6"]);
    let start = Chess::default();
    let s = simulate(&start, &moves, &[], None, &SimConfig::new(Style::Human, 5));
    let (mut dev, _) = live(
        &s.records,
        Cut::AfterPress(0).time(&s),
        &EngineConfig::default(),
    );
    // A first reconnection without the memory: e4 e5 Nf3 and Nf3 e5 e4 both lead there.
    let mut out = Vec::new();
    let early = final_fields(&start, &moves[..3], false);
    dev.engine
        .handle(1_000, &Observation::BoardDump(early), &mut out);
    assert_eq!(irregularities(&out), ["moves_missing@1"]);
    assert_eq!(dev.engine.games()[0].ply(), 0);
    let t = s.records.last().expect("records").t + 2 * SEC;
    let dump = final_fields(&start, &moves, false);
    let events = reconnect(&mut dev.engine, t, Some(memory_of(&s.records)), &dump);
    let resolved: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::IrregularityResolved {
                    code: IrregularityCode::MovesMissing,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(resolved.len(), 1, "{events:?}");
    assert!(irregularities(&events).is_empty());
    let got: Vec<String> = dev.engine.games()[0]
        .moves
        .iter()
        .map(|m| m.san.clone())
        .collect();
    assert_eq!(got, sans(&start, &moves));
    assert!(dev.engine.games()[0].moves.iter().all(|m| m.recovered));
}

/// A DGT board and clock fed straight to the engine, and the same changes logged in its memory.
struct Board {
    engine: BoardEngine,
    t: Micros,
    memory: Vec<MemoryEntry>,
    events: Vec<CoreEvent>,
    /// Whether the link is up (the engine sees what happens).
    linked: bool,
}

impl Board {
    fn new(cfg: EngineConfig) -> Board {
        let start = final_fields(&Chess::default(), &[], false);
        let mut b = Board {
            engine: BoardEngine::new(cfg),
            t: 0,
            memory: vec![MemoryEntry::Board(start.clone())],
            events: Vec::new(),
            linked: true,
        };
        b.engine
            .handle(0, &Observation::BoardDump(start), &mut b.events);
        b
    }

    fn field(&mut self, sq: &str, reading: SquareReading) {
        self.t += 700_000;
        let index = field_index(sq.parse().expect("square"), false);
        self.memory.push(MemoryEntry::Field {
            index,
            reading,
            quick: false,
        });
        if self.linked {
            self.engine.handle(
                self.t,
                &Observation::Field { index, reading },
                &mut self.events,
            );
        }
    }

    fn lift(&mut self, sq: &str) {
        self.field(sq, SquareReading::Empty);
    }

    fn place(&mut self, sq: &str, piece: char) {
        let p = shakmaty::Piece::from_char(piece).expect("piece");
        self.field(sq, SquareReading::Piece(p));
    }

    /// The clock's `side` presses with `millis` left; the other face shows `other`.
    fn press(&mut self, side: ClockSide, millis: u32, other: u32) {
        self.t += 500_000;
        self.memory.push(MemoryEntry::Press { side, millis });
        if self.linked {
            let left = side == ClockSide::Left;
            let (l, r) = if left {
                (millis, other)
            } else {
                (other, millis)
            };
            let face = |millis| eboardd::core::observation::ClockFace {
                millis,
                ..Default::default()
            };
            let reading = |right_up: bool| eboardd::core::observation::ClockReading {
                left: face(l),
                right: face(r),
                running: true,
                right_side_up: right_up,
                left_turn: !right_up,
                right_turn: right_up,
                battery_low: false,
            };
            // The lever before and after the press.
            self.engine.handle(
                self.t,
                &Observation::Clock(reading(!left)),
                &mut self.events,
            );
            self.engine.handle(
                self.t + 1,
                &Observation::Clock(reading(left)),
                &mut self.events,
            );
        }
    }

    fn reconnect(&mut self) -> Vec<CoreEvent> {
        let mut pos_fields = [SquareReading::Empty; 64];
        for e in &self.memory {
            match e {
                MemoryEntry::Board(f) => pos_fields = **f,
                MemoryEntry::Field { index, reading, .. } => {
                    pos_fields[usize::from(*index)] = *reading
                }
                _ => {}
            }
        }
        let t = self.t + 5 * SEC;
        let memory = std::mem::take(&mut self.memory);
        reconnect(&mut self.engine, t, Some(memory), &pos_fields)
    }
}

#[test]
fn a_move_changed_after_the_link_went_is_retracted_and_recovered_with_its_clock() {
    let mut b = Board::new(EngineConfig {
        white_clock_side: Some(ClockSide::Left),
        ..EngineConfig::default()
    });
    b.lift("h2");
    b.place("h4", 'P');
    b.press(ClockSide::Left, 5_990_000, 6_000_000);
    b.lift("a7");
    b.place("a5", 'p');
    b.press(ClockSide::Right, 5_980_000, 5_990_000);
    // White's rook slides up the h-file: on h2 the link goes.
    b.lift("h1");
    b.place("h2", 'R');
    b.linked = false;
    b.lift("h2");
    b.place("h3", 'R');
    b.press(ClockSide::Left, 5_970_000, 5_980_000);
    b.lift("a5");
    b.place("a4", 'p');
    b.press(ClockSide::Right, 5_960_000, 5_970_000);
    let live: Vec<String> = b.engine.games()[0]
        .moves
        .iter()
        .map(|m| m.san.clone())
        .collect();
    assert_eq!(live, ["h4", "a5", "Rh2"]);
    let events = b.reconnect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::MoveRetracted { ply } => format!("retracted {ply}"),
            EventKind::MoveMade {
                ply,
                san,
                recovered,
                ..
            } => format!("made {ply} {san} {recovered}"),
            EventKind::MoveCompleted {
                ply,
                by,
                clock,
                recovered,
                ..
            } => format!("completed {ply} {by:?} {clock:?} {recovered}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "retracted 3",
            "made 3 Rh3 true",
            "completed 3 Clock Some(ClockTimes { white: 5970000, black: 5980000 }) true",
            "made 4 a4 true",
            "completed 4 Clock Some(ClockTimes { white: 5970000, black: 5960000 }) true",
        ]
    );
}

#[test]
fn an_uncompleted_move_confirmed_by_the_memory_is_completed_by_its_press() {
    for side in [None, Some(ClockSide::Right)] {
        let mut b = Board::new(EngineConfig {
            white_clock_side: side,
            ..EngineConfig::default()
        });
        b.lift("d2");
        b.place("d4", 'P');
        b.press(ClockSide::Right, 600_000, 600_000);
        b.lift("d7");
        b.place("d5", 'p');
        b.press(ClockSide::Left, 590_000, 600_000);
        b.lift("c2");
        b.place("c4", 'P');
        b.linked = false;
        b.press(ClockSide::Right, 580_000, 590_000);
        b.lift("e7");
        b.place("e6", 'p');
        let events = b.reconnect();
        let completed: Vec<(u32, CompletedBy, Option<ClockTimes>, bool)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::MoveCompleted {
                    ply,
                    by,
                    clock,
                    recovered,
                    ..
                } => Some((*ply, *by, *clock, *recovered)),
                _ => None,
            })
            .collect();
        // White's side is known (configured, or learned from the first presses): c4 gets the
        // press's clock, e6 is made and not completed yet.
        assert_eq!(
            completed,
            [(
                3,
                CompletedBy::Clock,
                Some(ClockTimes {
                    white: 580_000,
                    black: 590_000
                }),
                false
            )],
            "{side:?}"
        );
        let g = &b.engine.games()[0];
        assert_eq!(
            g.moves.last().map(|m| (m.san.as_str(), m.recovered)),
            Some(("e6", true))
        );
        assert!(g.uncompleted_last().is_some());
    }
}

#[test]
fn clocks_stay_unknown_when_the_clock_sides_are_unknown() {
    // No clock seen live and none configured: the memory's presses name no colour.
    let mut b = Board::new(EngineConfig::default());
    b.linked = false;
    b.lift("e2");
    b.place("e4", 'P');
    b.press(ClockSide::Left, 590_000, 600_000);
    b.lift("c7");
    b.place("c5", 'p');
    b.press(ClockSide::Right, 595_000, 590_000);
    b.lift("g1");
    b.place("f3", 'N');
    let events = b.reconnect();
    let clocks: Vec<Option<ClockTimes>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MoveCompleted { clock, .. } => Some(*clock),
            _ => None,
        })
        .collect();
    assert_eq!(clocks, [None, None]);
    let g = &b.engine.games()[0];
    assert_eq!(
        g.moves.iter().map(|m| m.san.as_str()).collect::<Vec<_>>(),
        ["e4", "c5", "Nf3"]
    );
}

#[test]
fn the_same_observations_give_the_same_events() {
    let (b, cfg, sb) = sample(8, Style::Blitz);
    let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
    let run = || {
        let (mut dev, _) = live(
            &sb.records,
            Cut::MidMove(12).time(&sb),
            &EngineConfig::default(),
        );
        let t = sb.records.last().expect("records").t + 2 * SEC;
        wire(&reconnect(
            &mut dev.engine,
            t,
            Some(memory_of(&sb.records)),
            &dump,
        ))
    };
    let first = run();
    assert!(first.iter().any(|e| e.contains("\"recovered\":true")));
    assert_eq!(first, run());
}

/// A random legal game of `plies` plies (fewer if it ends), from the seed.
fn random_game(seed: u64, plies: usize) -> Vec<Move> {
    let mut rng = Rng::new(seed);
    let mut pos = Chess::default();
    let mut moves = Vec::new();
    while moves.len() < plies && !pos.is_game_over() {
        let legal: Vec<Move> = pos.legal_moves().into_iter().collect();
        let m = legal[rng.below(legal.len() as u64) as usize];
        pos.play_unchecked(m);
        moves.push(m);
    }
    moves
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random games (every kind of move, including underpromotions and en passant when they
    /// come up), any style, any cut: the rest comes back exactly.
    #[test]
    fn random_games_come_back_exactly(
        seed in any::<u64>(),
        plies in 2usize..120,
        style in prop_oneof![Just(Style::Clean), Just(Style::Human), Just(Style::Blitz)],
        reversed in any::<bool>(),
        cut_at in 0.0f64..1.0,
        kind in 0u8..3,
        fixed in any::<bool>(),
    ) {
        let moves = random_game(seed, plies);
        prop_assume!(moves.len() >= 2);
        let start = Chess::default();
        let mut cfg = SimConfig::new(style, seed);
        cfg.reversed_board = reversed;
        let s = simulate(&start, &moves, &[], None, &cfg);
        let n = moves.len();
        let k = ((n as f64 * cut_at) as usize).min(n - 1);
        let cut = match kind {
            0 => Cut::AfterPress(k),
            1 => Cut::BeforePress(k.max(1)),
            _ => Cut::MidMove(k.max(1)),
        };
        let r = recovers(&start, &moves, &s, reversed, cut, fixed);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

#[test]
fn colours_of_the_sides_follow_the_live_clock() {
    // The same memory, White on the right: the press of the right face is White's.
    let mut b = Board::new(EngineConfig {
        white_clock_side: Some(ClockSide::Right),
        ..EngineConfig::default()
    });
    b.linked = false;
    b.lift("e2");
    b.place("e4", 'P');
    b.press(ClockSide::Right, 590_000, 600_000);
    b.lift("e7");
    b.place("e5", 'p');
    b.press(ClockSide::Left, 585_000, 590_000);
    let events = b.reconnect();
    let clocks: Vec<Option<ClockTimes>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MoveCompleted { clock, .. } => Some(*clock),
            _ => None,
        })
        .collect();
    // e4's press (completing it) has no earlier press of Black's face: its clock stays unknown.
    assert_eq!(
        clocks,
        [
            None,
            Some(ClockTimes {
                white: 590_000,
                black: 585_000
            })
        ]
    );
    assert_eq!(
        b.engine.games()[0].moves[0].completed,
        Some(CompletedBy::Clock)
    );
}

#[test]
fn a_game_finished_while_away_comes_back_and_the_next_one_starts() {
    let (b, cfg, sb) = sample(9, Style::Human);
    assert!(!cfg.reversed_board);
    let k = 7;
    let (mut dev, _) = live(
        &sb.records,
        Cut::AfterPress(k).time(&sb),
        &EngineConfig::default(),
    );
    // The game went on to its end, then the pieces were cleared and set up again: the board
    // recognised its start position.
    let mut memory = memory_of(&sb.records);
    let end = final_fields(&b.start, &b.moves, false);
    for (i, r) in end.iter().enumerate() {
        if *r != SquareReading::Empty {
            memory.push(MemoryEntry::Field {
                index: i as u8,
                reading: SquareReading::Empty,
                quick: true,
            });
        }
    }
    let start = final_fields(&b.start, &[], false);
    memory.push(MemoryEntry::Board(start.clone()));
    let t = sb.records.last().expect("records").t + 2 * SEC;
    let events = reconnect(&mut dev.engine, t, Some(memory), &start);
    assert!(irregularities(&events).is_empty(), "{events:?}");
    let games = dev.engine.games();
    assert_eq!(games.len(), 2);
    let got: Vec<String> = games[0].moves.iter().map(|m| m.san.clone()).collect();
    assert_eq!(got, sans(&b.start, &b.moves));
    assert_eq!(
        games[0].moves.iter().filter(|m| m.recovered).count(),
        b.moves.len() - k
    );
    assert_eq!(games[1].ply(), 0);
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::GameStarted { .. })
    ));
}

#[test]
fn a_memory_that_lost_changes_recovers_exactly_or_nothing() {
    // The board overwrites a field's last entry when the same field changes again: a piece put
    // back, a slide, a capture by lifting the piece just moved leave fewer entries. Whatever
    // that loses, the memory recovers the game exactly, or nothing (the events are those of the
    // dump alone); never other moves.
    let all = support::games("standard");
    let games: Vec<&ScriptGame> = all.iter().step_by(97).collect();
    let cfg = EngineConfig::default();
    let (mut exact, mut fallback, mut wrong) = (0, 0, Vec::new());
    for (n, game) in games.iter().enumerate() {
        for style in [Style::Clean, Style::Human, Style::Blitz] {
            let sim = SimConfig::new(style, n as u64 + 3);
            let s = synthesize_game(game, &sim);
            let memory = memory_of_overwriting(&s.records);
            let dump = final_fields(&game.start, &game.moves, sim.reversed_board);
            let t = s.records.last().expect("records").t + 2 * SEC;
            for k in [0, 3, game.moves.len() / 2] {
                let cut = Cut::AfterPress(k.min(game.moves.len() - 1)).time(&s);
                let (mut with, _) = live(&s.records, cut, &cfg);
                let (mut without, _) = live(&s.records, cut, &cfg);
                if with.engine.games().is_empty() {
                    continue;
                }
                let a = reconnect(&mut with.engine, t, Some(memory.clone()), &dump);
                let b = reconnect(&mut without.engine, t, None, &dump);
                let got: Vec<String> = with.engine.games()[0]
                    .moves
                    .iter()
                    .map(|m| m.san.clone())
                    .collect();
                if wire(&a) == wire(&b) {
                    fallback += 1;
                } else if got == sans(&game.start, &game.moves) && irregularities(&a).is_empty() {
                    exact += 1;
                } else {
                    wrong.push(format!("game {n} {style:?} k {k}: {got:?}"));
                }
            }
        }
    }
    println!(
        "overwriting memory: {exact} exact, {fallback} as without it, {} wrong",
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(exact > fallback, "{exact} exact, {fallback} fallback");
}

#[test]
fn a_piece_lifted_between_the_memory_and_the_dump_still_recovers() {
    // On a DGT chain the memory and the dump are two polls apart: a hand may lift the next
    // move's piece in between. The dump shows the memory's end with that square empty: the
    // memory's moves are recorded, and the lift is a move in progress, nothing to report.
    let (b, cfg, sb) = sample(5, Style::Human);
    let k = 6;
    let (mut dev, _) = live(
        &sb.records,
        Cut::AfterPress(k).time(&sb),
        &EngineConfig::default(),
    );
    let n = b.moves.len() - 1;
    let sim = simulate(
        &b.start,
        &b.moves[..n],
        &[],
        None,
        &SimConfig::new(Style::Human, 5),
    );
    let mut dump = final_fields(&b.start, &b.moves[..n], cfg.reversed_board);
    let from = b.moves[n].from().expect("a move from a square");
    dump[usize::from(field_index(from, cfg.reversed_board))] = SquareReading::Empty;
    let t = sb.records.last().expect("records").t + 2 * SEC;
    let events = reconnect(&mut dev.engine, t, Some(memory_of(&sim.records)), &dump);
    let game = &dev.engine.games()[0];
    let got: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
    assert_eq!(got, sans(&b.start, &b.moves[..n]));
    assert_eq!(game.moves.iter().filter(|m| m.recovered).count(), n - k);
    assert!(
        irregularities(&events).is_empty(),
        "{:?}",
        irregularities(&events)
    );
}

#[test]
fn moves_made_while_the_memory_is_sent_are_followed_after_it() {
    // A real board takes about 8 s to send its memory at 9,600 baud, and the players go on:
    // the dump after it shows a move, or a move and the reply, made since the memory was read.
    // The memory's moves are recorded; what follows is followed as live (the one move made),
    // or recovered (two plies, the only sequence that leads there), nothing to report.
    for (sample_no, k, since) in [(5, 6, 1), (5, 6, 2), (3, 4, 1), (3, 10, 2)] {
        let (b, cfg, sb) = sample(sample_no, Style::Human);
        let (mut dev, _) = live(
            &sb.records,
            Cut::AfterPress(k).time(&sb),
            &EngineConfig::default(),
        );
        let n = b.moves.len() - since;
        let sim = simulate(
            &b.start,
            &b.moves[..n],
            &[],
            None,
            &SimConfig::new(Style::Human, 5),
        );
        let dump = final_fields(&b.start, &b.moves, cfg.reversed_board);
        let t = sb.records.last().expect("records").t + 2 * SEC;
        let events = reconnect(&mut dev.engine, t, Some(memory_of(&sim.records)), &dump);
        let game = &dev.engine.games()[0];
        let got: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
        assert_eq!(
            got,
            sans(&b.start, &b.moves),
            "sample {sample_no}, {since} since"
        );
        assert!(
            game.moves[k..n].iter().all(|m| m.recovered),
            "sample {sample_no}: the memory's moves are marked recovered"
        );
        assert!(
            irregularities(&events).is_empty(),
            "sample {sample_no}, {since} since: {:?}",
            irregularities(&events)
        );
    }
}
