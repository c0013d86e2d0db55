//! Irregularity accuracy (issue 3, "How it is judged"): captures synthesised from real games of
//! `tests/data/pgn` with irregularities injected by [`eboardd::sim::inject`], replayed through
//! the whole pipeline (DGT decoding → core), against the injector's truth.
//!
//! - **Recall**: of the injected irregularities, the share raised with the right code and ply
//!   (≥ 98%);
//! - **precision**: of the irregularities raised, the share that are true: injected, or
//!   contained in the handling itself (rook-first castling, a reversed board) (≥ 98%);
//! - **move record**: the share of games whose recorded moves are exactly the game's (≥ 99%);
//! - **clean and human captures without injections** raise exactly what the handling contains
//!   (read from the generator's hand orders and times), with one reported engine issue counted
//!   apart: a castling whose king and rook lifts the board reported in one scan, rook first,
//!   though the king was lifted first (see `tests/irregularities.rs`,
//!   `king_and_rook_lifted_within_one_scan_is_no_rook_first_castling`).
//!
//! The sample is deterministic: every 31st standard game, every 8th Chess960 game and every 4th
//! standard game with a queen promotion (promotions are rare, and two kinds need one), 217
//! games, six injections each (fewer in short games), one game in five on a reversed board. The
//! tests print their numbers and list every miss in their assertion messages; the ignored test
//! `whole_corpus` plays every game of the corpus.

mod support;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use eboardd::capture::{Record, RecordKind};
use eboardd::core::event::CoreEvent;
use eboardd::core::observation::SquareReading;
use eboardd::core::sensed::Orientation;
use eboardd::driver::dgt::{DgtDecoder, DgtMessage};
use eboardd::sim::hand::HandAction;
use eboardd::sim::inject::{InjectConfig, Injected, Kind, inject};
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{SimConfig, Style, synthesize_game};
use shakmaty::Role;
use shakmaty::{Move, Square};

/// One corpus game with where it comes from.
struct CorpusGame {
    /// File name relative to `tests/data/pgn` and game number among the games with moves.
    name: String,
    game: ScriptGame,
}

impl CorpusGame {
    fn has_queen_promotion(&self) -> bool {
        self.game
            .moves
            .iter()
            .any(|m| m.promotion() == Some(Role::Queen))
    }
}

/// Every game of the corpus, in file order.
fn corpus() -> &'static [CorpusGame] {
    static GAMES: OnceLock<Vec<CorpusGame>> = OnceLock::new();
    GAMES.get_or_init(|| {
        let root = support::pgn_dir();
        let mut out = Vec::new();
        for f in support::pgn_files(&root) {
            let file = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
            let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{file}: {e}"));
            for (i, g) in parse_games_bytes(&bytes).into_iter().enumerate() {
                let game = g.unwrap_or_else(|e| panic!("{file}: {e}"));
                out.push(CorpusGame {
                    name: format!("{file} #{}", i + 1),
                    game,
                });
            }
        }
        assert!(out.len() > 4000, "corpus: {} games", out.len());
        out
    })
}

/// A deterministic sample: every `step_standard`-th standard game, every `step_960`-th Chess960
/// game and every `step_promotion`-th standard game with a queen promotion; one game in five on
/// a reversed board.
fn sample(
    step_standard: usize,
    step_960: usize,
    step_promotion: usize,
) -> Vec<(&'static CorpusGame, InjectConfig)> {
    let games = corpus();
    let standard: Vec<usize> = (0..games.len())
        .filter(|&i| !games[i].game.is_chess960())
        .collect();
    let c960: Vec<usize> = (0..games.len())
        .filter(|&i| games[i].game.is_chess960())
        .collect();
    let promoting: Vec<usize> = standard
        .iter()
        .copied()
        .filter(|&i| games[i].has_queen_promotion())
        .collect();
    let mut picked: Vec<usize> = Vec::new();
    picked.extend(standard.iter().step_by(step_standard));
    picked.extend(c960.iter().skip(3 % step_960).step_by(step_960));
    picked.extend(
        promoting
            .iter()
            .skip(1 % step_promotion)
            .step_by(step_promotion),
    );
    picked.sort_unstable();
    picked.dedup();
    picked
        .into_iter()
        .enumerate()
        .map(|(k, i)| {
            let g = &games[i];
            let mut cfg = InjectConfig::new(3_000_000 + i as u64);
            cfg.sim.reversed_board = k % 5 == 4;
            (g, cfg)
        })
        .collect()
}

/// The sample of the default tests.
fn default_sample() -> Vec<(&'static CorpusGame, InjectConfig)> {
    sample(31, 8, 4)
}

/// What the engine made of a capture: per game the SANs, and the `(code, ply)` raised.
struct Replay {
    games: Vec<Vec<String>>,
    raised: Vec<(String, u32)>,
}

fn replay(records: &[Record]) -> Replay {
    let mut events: Vec<CoreEvent> = Vec::new();
    let device = support::replay_records(records, &mut events);
    let raised = support::raised(&events);
    Replay {
        games: device
            .engine
            .games()
            .iter()
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .collect(),
        raised,
    }
}

fn owned(list: &[(&'static str, u32)]) -> Vec<(String, u32)> {
    list.iter().map(|(c, p)| (c.to_string(), *p)).collect()
}

/// Multiset difference: the items of `a` not matched by one of `b`.
fn minus(a: &[(String, u32)], b: &[(String, u32)]) -> Vec<(String, u32)> {
    let mut left: BTreeMap<&(String, u32), usize> = BTreeMap::new();
    for x in b {
        *left.entry(x).or_default() += 1;
    }
    let mut out = Vec::new();
    for x in a {
        match left.get_mut(x) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(x.clone()),
        }
    }
    out
}

/// Counts of a batch.
#[derive(Default)]
struct Stats {
    games: usize,
    exact_games: usize,
    injected: usize,
    injected_found: usize,
    raised: usize,
    raised_true: usize,
    /// Per kind: injected, raised right.
    per_kind: BTreeMap<Kind, (usize, usize)>,
    misses: Vec<String>,
    false_alarms: Vec<String>,
    wrong_moves: Vec<String>,
}

impl Stats {
    fn recall(&self) -> f64 {
        percent(self.injected_found, self.injected)
    }

    fn precision(&self) -> f64 {
        percent(self.raised_true, self.raised)
    }

    fn exact(&self) -> f64 {
        percent(self.exact_games, self.games)
    }

    fn summary(&self) -> String {
        format!(
            "{} games, {} injected: recall {:.2}% ({}/{}), precision {:.2}% ({}/{}), move \
             record exact in {:.2}% ({}/{})",
            self.games,
            self.injected,
            self.recall(),
            self.injected_found,
            self.injected,
            self.precision(),
            self.raised_true,
            self.raised,
            self.exact(),
            self.exact_games,
            self.games
        )
    }

    /// Asserts the issue's thresholds, listing every failure.
    fn judge(&self) {
        let summary = self.summary();
        assert!(
            self.recall() >= 98.0,
            "{summary}; recall needs 98%; missed:\n{}",
            self.misses.join("\n")
        );
        assert!(
            self.precision() >= 98.0,
            "{summary}; precision needs 98%; raised but not true:\n{}",
            self.false_alarms.join("\n")
        );
        assert!(
            self.exact() >= 99.0,
            "{summary}; the move record must be exact in 99% of the games:\n{}",
            self.wrong_moves.join("\n")
        );
    }
}

fn percent(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

fn describe(inj: &Injected) -> String {
    let parts: Vec<String> = inj.injections.iter().map(|i| i.describe()).collect();
    parts.join(", ")
}

/// Injects, replays and compares every case; prints the numbers and every failure.
fn measure(what: &str, cases: Vec<(&CorpusGame, InjectConfig)>) -> Stats {
    let mut s = Stats::default();
    for (g, cfg) in cases {
        let inj = inject(&g.game, &cfg);
        let r = replay(&inj.records);
        let name = format!(
            "{} (seed {}{})",
            g.name,
            cfg.sim.seed,
            if cfg.sim.reversed_board {
                ", reversed"
            } else {
                ""
            }
        );
        s.games += 1;
        match r.games.as_slice() {
            [got] if *got == inj.sans => s.exact_games += 1,
            games => {
                let got = games.last().cloned().unwrap_or_default();
                let ply = got
                    .iter()
                    .zip(&inj.sans)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(inj.sans.len()));
                s.wrong_moves.push(format!(
                    "{name}: {} games recorded; first difference at ply {} (want {:?}, got \
                     {:?}); injections {}",
                    games.len(),
                    ply + 1,
                    inj.sans.get(ply),
                    got.get(ply),
                    describe(&inj)
                ));
            }
        }
        let injected: Vec<(String, u32)> = inj
            .injections
            .iter()
            .map(|i| (i.kind.code().to_string(), i.ply))
            .collect();
        let missed = minus(&injected, &r.raised);
        s.injected += injected.len();
        s.injected_found += injected.len() - missed.len();
        for i in &inj.injections {
            let e = s.per_kind.entry(i.kind).or_default();
            e.0 += 1;
            if !missed.contains(&(i.kind.code().to_string(), i.ply)) {
                e.1 += 1;
            }
        }
        let false_alarms = minus(
            &minus(&r.raised, &owned(&inj.truth)),
            &owned(&inj.tolerated),
        );
        s.raised += r.raised.len();
        s.raised_true += r.raised.len() - false_alarms.len();
        if !missed.is_empty() {
            s.misses.push(format!(
                "{name}: missed {missed:?}; raised {:?}; injections {}",
                r.raised,
                describe(&inj)
            ));
        }
        if !false_alarms.is_empty() {
            s.false_alarms.push(format!(
                "{name}: raised {false_alarms:?}, not in the truth {:?}; injections {}",
                inj.truth,
                describe(&inj)
            ));
        }
    }
    println!("irregularity accuracy, {what}: {}", s.summary());
    for (k, (n, found)) in &s.per_kind {
        println!("  {k:?} ({}): {found}/{n}", k.code());
    }
    for line in s.misses.iter().chain(&s.false_alarms).chain(&s.wrong_moves) {
        println!("  {line}");
    }
    s
}

fn default_stats() -> &'static Stats {
    static STATS: OnceLock<Stats> = OnceLock::new();
    STATS.get_or_init(|| measure("sample", default_sample()))
}

#[test]
fn recall_is_at_least_98_percent() {
    let s = default_stats();
    assert!(
        s.recall() >= 98.0,
        "{}; recall needs 98%; missed:\n{}",
        s.summary(),
        s.misses.join("\n")
    );
}

#[test]
fn precision_is_at_least_98_percent() {
    let s = default_stats();
    assert!(
        s.precision() >= 98.0,
        "{}; precision needs 98%; raised but not true:\n{}",
        s.summary(),
        s.false_alarms.join("\n")
    );
}

#[test]
fn move_record_is_exact_in_99_percent_of_games() {
    let s = default_stats();
    assert!(
        s.exact() >= 99.0,
        "{}; the move record must be exact in 99% of the games:\n{}",
        s.summary(),
        s.wrong_moves.join("\n")
    );
}

#[test]
fn every_kind_is_injected_many_times() {
    let s = default_stats();
    assert!(s.games >= 150, "only {} games", s.games);
    for kind in Kind::ALL {
        let (n, _) = s.per_kind.get(&kind).copied().unwrap_or_default();
        assert!(n >= 20, "{kind:?} injected only {n} times");
    }
}

/// Every game of the corpus once, with the thresholds of the sample (about 4,200 games, a few
/// seconds in release mode).
#[test]
#[ignore = "whole corpus; run with --ignored"]
fn whole_corpus() {
    measure("whole corpus", sample(1, 1, usize::MAX)).judge();
}

/// Whether the board reported the lifts of the castling king and rook of `ply` in one scan
/// (less than 100 ms apart), the rook's first, though the king was lifted first: the reported
/// engine issue, not a property of the handling.
fn rook_reported_first_in_one_scan(inj: &Injected, reversed: bool, ply: u32) -> bool {
    let Some(p) = inj.plies.get(ply as usize - 1) else {
        return false;
    };
    let Move::Castle { king, rook } = p.mv else {
        return false;
    };
    let king_first = p.order.iter().position(|a| *a == HandAction::Lift(king))
        < p.order.iter().position(|a| *a == HandAction::Lift(rook));
    let orientation = if reversed {
        Orientation::Reversed
    } else {
        Orientation::Normal
    };
    let mut decoder = DgtDecoder::new();
    let mut lifts: Vec<(i64, Square)> = Vec::new();
    for r in &inj.records {
        let RecordKind::Rx(bytes) = &r.kind else {
            continue;
        };
        if r.t < p.first_action || r.t > p.last_action + 300_000 {
            continue;
        }
        let mut messages = Vec::new();
        decoder.decode(bytes, &mut messages);
        for m in messages {
            if let DgtMessage::FieldUpdate { index, reading } = m
                && reading == SquareReading::Empty
            {
                lifts.push((r.t, orientation.square_of(index)));
            }
        }
    }
    let first = |sq: Square| lifts.iter().find(|(_, s)| *s == sq).map(|(t, _)| *t);
    match (first(rook), first(king)) {
        (Some(r), Some(k)) => king_first && r <= k && k - r < 100_000,
        _ => false,
    }
}

/// Captures without injections (clean and human style, the simulator's own) raise exactly what
/// the handling contains: rook-first castling the board shows, a reversed board.
#[test]
fn clean_and_human_captures_raise_only_what_the_handling_contains() {
    let mut failures = Vec::new();
    let mut known = Vec::new();
    let (mut total, mut natural, mut tolerated) = (0, 0, 0);
    for (k, (g, cfg)) in default_sample().into_iter().enumerate() {
        let style = [Style::Clean, Style::Human][k % 2];
        let cfg = InjectConfig {
            sim: SimConfig { style, ..cfg.sim },
            count: 0,
            ..cfg
        };
        let inj = inject(&g.game, &cfg);
        assert!(inj.injections.is_empty());
        assert_eq!(
            inj.records,
            synthesize_game(&g.game, &cfg.sim).records,
            "{}: without injections the injector must give the simulator's capture",
            g.name
        );
        let want = owned(&inj.truth);
        let r = replay(&inj.records);
        total += 1;
        natural += want.len();
        tolerated += inj.tolerated.len();
        let missing = minus(&want, &r.raised);
        let mut extra = minus(&minus(&r.raised, &want), &owned(&inj.tolerated));
        let name = format!(
            "{} ({style:?}, seed {}{})",
            g.name,
            cfg.sim.seed,
            if cfg.sim.reversed_board {
                ", reversed"
            } else {
                ""
            }
        );
        extra.retain(|(code, ply)| {
            let issue = code == "castling_rook_touched_first"
                && rook_reported_first_in_one_scan(&inj, cfg.sim.reversed_board, *ply);
            if issue {
                known.push(format!("{name}: castling_rook_touched_first at ply {ply}"));
            }
            !issue
        });
        let exact = r.games.len() == 1 && r.games[0] == inj.sans;
        if !missing.is_empty() || !extra.is_empty() || !exact {
            failures.push(format!(
                "{name}: missing {missing:?}, unexpected {extra:?}{}",
                if exact { "" } else { ", moves differ" }
            ));
        }
    }
    println!(
        "captures without injections: {total} games, {natural} irregularities in the handling \
         (and {tolerated} the sensors may not show), {} failing, {} raised by the reported \
         same-scan castling issue",
        failures.len(),
        known.len()
    );
    for f in failures.iter().chain(&known) {
        println!("  {f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} captures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
