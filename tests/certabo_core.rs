//! What the core makes of a Certabo board: the emulated board's lines (noisy readers included),
//! decoded by the `certabo` driver into changed squares, go through the same inference as any
//! board's. Corpus games come out exact with noisy reads; a promotion takes the spare queen
//! shown before the game; a board turned round after calibration is found by the core; a piece
//! whose id the board never saw raises no move. No clock: moves are completed by the next move.

mod support;

use eboardd::core::engine::EngineConfig;
use eboardd::core::event::CoreEvent;
use eboardd::core::observation::Micros;
use eboardd::driver::BoardDriver;
use eboardd::driver::certabo::Certabo;
use eboardd::replay::Device;
use eboardd::sim::emulator::certabo::{CertaboConfig, CertaboEmulator};
use eboardd::sim::emulator::runner::EmulatedBoard;
use eboardd::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, Style};
use serde_json::Value;
use shakmaty::san::SanPlus;

/// What one game on the emulated board gave.
struct Played {
    events: Vec<CoreEvent>,
    device: Device,
    board: CertaboEmulator,
}

impl Played {
    fn json(&self) -> Vec<Value> {
        support::wire_events(&self.events)
    }

    fn of(&self, kind: &str, field: &str) -> Vec<String> {
        support::event_fields(&self.events, kind, field)
    }

    fn irregularities(&self) -> Vec<String> {
        self.of("irregularity", "code")
    }

    /// The SAN of the last game's moves, as the core recorded them.
    fn sans(&self) -> Vec<String> {
        self.device
            .engine
            .games()
            .last()
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .unwrap_or_default()
    }
}

fn sans_of(game: &ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// Plays `game` in `style` on an emulated Certabo board set up with `cfg`, its lines fed to a
/// `certabo` device as they come, until a few seconds after the script's end.
fn play(game: &ScriptGame, style: Style, seed: u64, cfg: CertaboConfig) -> Played {
    let script = Script::from_games(
        std::slice::from_ref(game),
        &SimConfig::new(style, seed),
        5_000_000,
    );
    let players = Emulator::new(
        script,
        EmulatorConfig {
            clock: ClockModel::None,
            ..Default::default()
        },
    );
    let mut board = CertaboEmulator::new(players, cfg);
    let mut device = Device::with_driver("certabo", &Certabo, EngineConfig::default());
    let mut events = Vec::new();
    let mut out = Vec::new();
    // eboardd's start: every LED off; the players begin.
    assert!(board.host_input(&Certabo.start(), &mut out));
    device.receive(0, &out, &mut events);
    let mut end: Option<Micros> = None;
    let mut t = 0;
    while let Some(due) = board.next_due() {
        t = due;
        if end.is_some_and(|e| t > e) {
            break;
        }
        out.clear();
        board.advance(t, &mut out);
        if !out.is_empty() {
            device.receive(t, &out, &mut events);
        }
        if end.is_none() && board.finished() {
            end = Some(t + 5_000_000);
        }
    }
    device.engine.finish(t, &mut events);
    assert_eq!(board.unknown_bytes(), 0);
    Played {
        events,
        device,
        board,
    }
}

fn corpus(file: &str) -> Vec<ScriptGame> {
    support::corpus_file(&format!("standard/{file}"))
        .into_iter()
        // Set-up positions are no Certabo games: the board is calibrated on the start position,
        // and the core starts a set-up game only before any game (see the module docs).
        .filter(|g| g.moves.len() >= 20 && g.tag("FEN").is_none())
        .collect()
}

fn one(pgn: &str) -> ScriptGame {
    parse_games(pgn).remove(0).expect("a game")
}

#[test]
fn corpus_games_come_out_exact_with_noisy_reads() {
    let games = corpus("pychess_world_matches.pgn");
    let mut failed = Vec::new();
    let picked: Vec<&ScriptGame> = games.iter().step_by(41).take(6).collect();
    for (k, game) in picked.iter().enumerate() {
        let seed = 100 + k as u64;
        let p = play(game, Style::Human, seed, CertaboConfig::noisy(seed));
        let (m, d, j) = p.board.noise;
        assert!(m > 0 && d > 0 && j > 0, "noise was on: {:?}", p.board.noise);
        if p.sans() != sans_of(game) {
            let got = p.sans();
            let want = sans_of(game);
            let ply = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            failed.push(format!(
                "game {k} (seed {seed}): {} of {} plies, first difference at ply {}: {:?} for {:?}",
                got.len(),
                want.len(),
                ply + 1,
                got.get(ply),
                want.get(ply)
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn a_promotion_takes_the_spare_queen_shown_before_the_game() {
    let game = one("1. e4 d5 2. exd5 c6 3. dxc6 Nf6 4. cxb7 Nbd7 5. bxa8=Q e5 6. Qxa7 *");
    let p = play(&game, Style::Human, 3, CertaboConfig::noisy(3));
    assert_eq!(p.sans(), sans_of(&game), "{:#?}", p.json());
    assert_eq!(p.board.unknown_pieces(), 0);
}

#[test]
fn a_board_turned_round_after_calibration_is_found_by_the_core() {
    let games = corpus("pychess_dortmund.pgn");
    let game = &games[3];
    let p = play(
        game,
        Style::Human,
        11,
        CertaboConfig {
            reversed: true,
            ..CertaboConfig::noisy(11)
        },
    );
    assert_eq!(p.sans(), sans_of(game));
    let g = p.device.engine.games().last().unwrap();
    assert!(g.reversed, "the game is played on a board turned round");
    assert!(
        p.irregularities().contains(&"board_reversed".to_string()),
        "{:?}",
        p.irregularities()
    );
}

/// Games played on `cfg(seed)` boards: the ones not exact (or with moves reported missing or
/// illegal), described, and the number of `displaced_pieces` raised in all of them (every
/// game is played without displacing a piece: each one is a false alarm).
fn not_exact(games: &[&ScriptGame], cfg: impl Fn(u64) -> CertaboConfig) -> (Vec<String>, usize) {
    let mut failed = Vec::new();
    let mut displaced = 0;
    for (k, game) in games.iter().enumerate() {
        let seed = 300 + k as u64;
        let p = play(game, Style::Human, seed, cfg(seed));
        let (got, want) = (p.sans(), sans_of(game));
        let codes = p.irregularities();
        displaced += codes.iter().filter(|c| *c == "displaced_pieces").count();
        let wrong: Vec<&String> = codes
            .iter()
            .filter(|c| ["moves_missing", "illegal_move"].contains(&c.as_str()))
            .collect();
        if got != want || !wrong.is_empty() {
            let ply = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            failed.push(format!(
                "game {k} (seed {seed}): {} of {} plies, first difference at ply {}: {:?} for {:?}; {codes:?}",
                got.len(),
                want.len(),
                ply + 1,
                got.get(ply),
                want.get(ply)
            ));
        }
    }
    (failed, displaced)
}

#[test]
fn misreading_readers_at_two_and_three_percent_with_low_gain_chips_lose_no_move() {
    let games = corpus("pychess_world_matches.pgn");
    let picked: Vec<&ScriptGame> = games.iter().step_by(29).take(6).collect();
    for rate in [0.02, 0.03] {
        let (failed, displaced) = not_exact(&picked, |seed| CertaboConfig::misreading(seed, rate));
        assert!(failed.is_empty(), "{rate}: {failed:#?}");
        // Measured: one false `displaced_pieces` in these 12 games (a quick exchange on one
        // square whose middle piece no majority of lines saw, raised before the gap recovery
        // that records both moves).
        assert!(displaced <= 1, "{rate}: {displaced} false displaced_pieces");
    }
}

#[test]
fn a_board_turned_round_while_it_is_calibrated_plays_exact_games() {
    let games = corpus("pychess_dortmund.pgn");
    let picked: Vec<&ScriptGame> = games.iter().step_by(5).take(4).collect();
    for spare_queens in [1, 0] {
        for noisy in [false, true] {
            let cfg = |seed| {
                let base = if noisy {
                    CertaboConfig::misreading(seed, 0.02)
                } else {
                    CertaboConfig {
                        seed,
                        ..CertaboConfig::default()
                    }
                };
                CertaboConfig {
                    spare_queens,
                    turned_at_calibration: true,
                    ..base
                }
            };
            let (failed, displaced) = not_exact(&picked, cfg);
            assert!(
                failed.is_empty(),
                "spares {spare_queens}, noisy {noisy}: {failed:#?}"
            );
            assert!(
                displaced <= 1,
                "spares {spare_queens}, noisy {noisy}: {displaced}"
            );
            let p = play(picked[0], Style::Human, 77, cfg(77));
            let reversed = p
                .irregularities()
                .iter()
                .filter(|c| *c == "board_reversed")
                .count();
            assert_eq!(reversed, 1, "{:?}", p.irregularities());
        }
    }
}

#[test]
fn a_piece_the_board_never_saw_raises_no_move() {
    // No spare queen shown: the promoted queen's id is unknown to the table.
    let game = one("1. e4 d5 2. exd5 c6 3. dxc6 Nf6 4. cxb7 Nbd7 5. bxa8=Q e5 *");
    let p = play(
        &game,
        Style::Human,
        5,
        CertaboConfig {
            spare_queens: 0,
            ..CertaboConfig::noisy(5)
        },
    );
    assert_eq!(p.board.unknown_pieces(), 1);
    let want = sans_of(&game);
    assert_eq!(p.sans(), want[..8], "no promotion, and nothing after it");
    assert!(
        !p.of("move_made", "san").iter().any(|s| s.contains("a8")),
        "{:?}",
        p.of("move_made", "san")
    );
    assert!(
        !p.irregularities().is_empty(),
        "the unknown piece is reported"
    );
}

/// A wider sample, for measuring: `cargo test --release --test certabo_core -- --ignored`.
#[test]
#[ignore]
fn wider_sample_with_noisy_reads() {
    let mut games = corpus("pychess_world_matches.pgn");
    games.extend(corpus("pychess_dortmund.pgn"));
    for style in [Style::Human, Style::Blitz] {
        let mut exact = 0;
        let mut failed = Vec::new();
        let mut codes: std::collections::BTreeMap<String, usize> = Default::default();
        let picked: Vec<&ScriptGame> = games.iter().step_by(7).take(60).collect();
        for (k, game) in picked.iter().enumerate() {
            let seed = 1000 + k as u64;
            let cfg = if std::env::var("CLEAN").is_ok() {
                CertaboConfig {
                    seed,
                    ..CertaboConfig::default()
                }
            } else {
                CertaboConfig::noisy(seed)
            };
            let p = play(game, style, seed, cfg);
            for c in p.irregularities() {
                *codes.entry(c).or_default() += 1;
            }
            if p.sans() == sans_of(game) {
                exact += 1;
            } else {
                let got = p.sans();
                let ply = got
                    .iter()
                    .zip(sans_of(game))
                    .take_while(|(a, b)| **a == *b)
                    .count();
                failed.push((k, seed, ply + 1));
            }
        }
        println!(
            "{style:?}: {exact}/{} exact; failed (game, seed, ply): {failed:?}; irregularities: {codes:?}",
            picked.len()
        );
    }
}

/// The read filter's delay, for the closing note and `docs/boards.md`: from the hand letting
/// go of a move's piece to the move's event, in script time, on clean, misreading and turned
/// boards (`cargo test --release --test certabo_core filter_delay -- --ignored --nocapture`).
#[test]
#[ignore]
fn filter_delay() {
    let games = corpus("pychess_world_matches.pgn");
    let picked: Vec<&ScriptGame> = games.iter().step_by(13).take(12).collect();
    type Case = (&'static str, fn(u64) -> CertaboConfig);
    let cases: [Case; 4] = [
        ("clean", |seed| CertaboConfig {
            seed,
            ..CertaboConfig::default()
        }),
        ("misreading 2 %", |seed| {
            CertaboConfig::misreading(seed, 0.02)
        }),
        ("misreading 3 %", |seed| {
            CertaboConfig::misreading(seed, 0.03)
        }),
        ("turned, 2 %, no spare", |seed| CertaboConfig {
            spare_queens: 0,
            turned_at_calibration: true,
            ..CertaboConfig::misreading(seed, 0.02)
        }),
    ];
    for (name, cfg) in cases {
        let mut delays = Vec::new();
        let mut exact = 0;
        for (k, game) in picked.iter().enumerate() {
            let seed = 500 + k as u64;
            let c = cfg(seed);
            let setup = c.setup;
            let p = play(game, Style::Human, seed, c);
            if p.sans() == sans_of(game) {
                exact += 1;
            }
            let marks = &p.board.players().script().plies;
            for e in p.json() {
                if e["kind"] == "move_made" && e["recovered"] != true {
                    let ply = e["ply"].as_u64().unwrap() as usize;
                    let t = (e["t"].as_f64().unwrap() * 1e6) as i64;
                    if let Some(m) = marks.iter().find(|m| m.ply == ply) {
                        delays.push(t - setup - m.last_action);
                    }
                }
            }
        }
        delays.sort_unstable();
        let q = |f: f64| delays[((delays.len() - 1) as f64 * f) as usize] as f64 / 1e3;
        println!(
            "{name}: {exact}/{} exact, {} moves, move -> event ms p50 {:.0} p90 {:.0} max {:.0}",
            picked.len(),
            delays.len(),
            q(0.5),
            q(0.9),
            q(1.0)
        );
    }
}
