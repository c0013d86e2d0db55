//! The board engine fed arbitrary observation sequences built from the input bytes (field
//! updates, board dumps, clock readings, link and operator events, the board's memory, with
//! non-decreasing time):
//! never panics, every made move is legal in the position before it and its SAN names it, and
//! the same input gives the same events twice.
//!
//! Input layout: a sequence of ops, each `[op, a, b, ...]` (missing bytes read as 0):
//! - `op % 16` in 0..=7: field update, field `a % 64`, reading code `b % 16`;
//! - 8: the start position as a board dump, with up to `a % 4` fields changed (pairs of bytes);
//! - 9: a clock reading built from the next 5 bytes;
//! - 10: let time pass (`a` × 50 ms) and tick;
//! - 11: no clock; 12: connected; 13: disconnected; 14: operator new game;
//! - 15: by `a % 8`: a correction (4: take back, 5: replace a move, 6: set a position), the
//!   board's memory (7: `b % 48` entries, each from its first byte `c`: `c % 8` = 0 the start
//!   position or 1 an empty board as an anchor, 2 a press of the side `c & 8`, 3 unknown, else a
//!   field change of field `d` (any byte when `c & 32`, so indices past 63 too, else `d % 64`),
//!   reading `e`, quick when `c & 16`), else a result set.
//!
//! Every op also advances the time by `op / 16` × 20 ms.
#![no_main]

use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::core::observation::{
    ClockFace, ClockReading, ClockSide, FieldArray, MemoryEntry, Micros, Observation,
    OperatorAction, SquareReading,
};
use eboardd::driver::dgt::reading_from_code;
use libfuzzer_sys::fuzz_target;
use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position, Square};

fn start_dump() -> Box<FieldArray> {
    let board = Chess::default().board().clone();
    let mut fields: FieldArray = [SquareReading::Empty; 64];
    for sq in Square::ALL {
        let idx = (7 - u32::from(sq.rank())) * 8 + u32::from(sq.file());
        if let Some(p) = board.piece_at(sq) {
            fields[idx as usize] = SquareReading::Piece(p);
        }
    }
    Box::new(fields)
}

fn reading(code: u8) -> SquareReading {
    reading_from_code(code % 16).unwrap_or(SquareReading::Empty)
}

/// The observation stream of the input: `(time, observation)`, `None` = tick only.
fn script(data: &[u8]) -> Vec<(Micros, Option<Observation>)> {
    let mut out = Vec::new();
    let mut t: Micros = 0;
    let mut i = 0;
    let next = |i: &mut usize| {
        let b = data.get(*i).copied().unwrap_or(0);
        *i += 1;
        b
    };
    while i < data.len() {
        let op = next(&mut i);
        t += Micros::from(op / 16) * 20_000;
        let obs = match op % 16 {
            0..=7 => {
                let index = next(&mut i) % 64;
                let code = next(&mut i);
                Some(Observation::Field {
                    index,
                    reading: reading(code),
                })
            }
            8 => {
                let mut dump = start_dump();
                for _ in 0..next(&mut i) % 4 {
                    let idx = next(&mut i) % 64;
                    let code = next(&mut i);
                    dump[idx as usize] = reading(code);
                }
                Some(Observation::BoardDump(dump))
            }
            9 => {
                let flags = next(&mut i);
                let l = next(&mut i);
                let r = next(&mut i);
                let lm = next(&mut i);
                let rm = next(&mut i);
                Some(Observation::Clock(ClockReading {
                    left: ClockFace {
                        millis: u32::from(l) * 60_000 + u32::from(lm) * 1000,
                        flag: flags & 1 != 0,
                        flag_shown: false,
                    },
                    right: ClockFace {
                        millis: u32::from(r) * 60_000 + u32::from(rm) * 1000,
                        flag: flags & 2 != 0,
                        flag_shown: false,
                    },
                    running: flags & 4 != 0,
                    right_side_up: flags & 8 != 0,
                    left_turn: flags & 16 != 0,
                    right_turn: flags & 32 != 0,
                    battery_low: flags & 64 != 0,
                }))
            }
            10 => {
                t += Micros::from(next(&mut i)) * 50_000;
                None
            }
            11 => Some(Observation::ClockAbsent),
            12 => Some(Observation::Connected {
                driver: "dgt".into(),
                serial: None,
            }),
            13 => Some(Observation::Disconnected {
                driver: "dgt".into(),
                serial: None,
            }),
            14 => Some(Observation::Operator(OperatorAction::NewGame { fen: None })),
            // A polled board's answer ended (a DGT chain's).
            _ if data.get(i).is_some_and(|k| k % 8 == 6) => {
                i += 1;
                Some(Observation::Polled)
            }
            _ if data.get(i).is_some_and(|k| k % 8 == 7) => {
                i += 1;
                let mut entries = Vec::new();
                for _ in 0..next(&mut i) % 48 {
                    let c = next(&mut i);
                    entries.push(match c % 8 {
                        0 => MemoryEntry::Board(start_dump()),
                        1 => MemoryEntry::Board(Box::new([SquareReading::Empty; 64])),
                        2 => MemoryEntry::Press {
                            side: if c & 8 != 0 {
                                ClockSide::Left
                            } else {
                                ClockSide::Right
                            },
                            millis: u32::from(next(&mut i)) * 1000,
                        },
                        3 => MemoryEntry::Unknown,
                        _ => {
                            let d = next(&mut i);
                            MemoryEntry::Field {
                                index: if c & 32 != 0 { d } else { d % 64 },
                                reading: reading(next(&mut i)),
                                quick: c & 16 != 0,
                            }
                        }
                    });
                }
                Some(Observation::Memory(entries))
            }
            _ => {
                let kind = next(&mut i);
                Some(Observation::Operator(match kind % 8 {
                    // Arbiter corrections: in range or not, legal or not.
                    4 => OperatorAction::TakeBack {
                        ply: u32::from(next(&mut i) % 64),
                    },
                    5 => {
                        let (a, b) = (next(&mut i) % 64, next(&mut i) % 64);
                        let sq = |n: u8| Square::new(u32::from(n)).to_string();
                        OperatorAction::ReplaceMove {
                            ply: u32::from(next(&mut i) % 64),
                            uci: Some(format!("{}{}", sq(a), sq(b))),
                            san: None,
                        }
                    }
                    6 => OperatorAction::SetPosition {
                        fen: [
                            "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
                            "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 b GBgb - 0 1",
                            "not a fen",
                            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
                        ][next(&mut i) as usize % 4]
                            .to_owned(),
                    },
                    _ => OperatorAction::SetResult {
                        result: ["1-0", "0-1", "1/2-1/2", "2-0", "*"][next(&mut i) as usize % 5]
                            .to_owned(),
                    },
                }))
            }
        };
        out.push((t, obs));
    }
    out
}

/// Every recorded move of every game is legal before it and its SAN names it.
fn check_games(engine: &BoardEngine) {
    for game in engine.games() {
        for (n, rec) in game.moves.iter().enumerate() {
            let before = game.position_after(n as u32);
            assert!(
                before.is_legal(rec.mv),
                "game {} ply {}: {} ({:?}) illegal",
                game.number,
                n + 1,
                rec.san,
                rec.mv
            );
            let san: SanPlus = rec.san.parse().expect("recorded SAN parses");
            assert_eq!(
                san.san.to_move(before).ok(),
                Some(rec.mv),
                "game {} ply {}: SAN {} names another move",
                game.number,
                n + 1,
                rec.san
            );
        }
    }
}

fn run(script: &[(Micros, Option<Observation>)]) -> Vec<CoreEvent> {
    let mut engine = BoardEngine::new(EngineConfig::default());
    let mut events = Vec::new();
    let mut checked = 0;
    for (t, obs) in script {
        match obs {
            Some(o) => engine.handle(*t, o, &mut events),
            None => engine.tick(*t, &mut events),
        }
        // A made move must be legal even if it is retracted later: check while it is recorded.
        if events[checked..]
            .iter()
            .any(|e| matches!(e.kind, EventKind::MoveMade { .. }))
        {
            check_games(&engine);
        }
        checked = events.len();
    }
    let end = script.last().map_or(0, |(t, _)| *t);
    engine.finish(end, &mut events);
    check_games(&engine);
    events
}

fuzz_target!(|data: &[u8]| {
    let script = script(data);
    let first = run(&script);
    if std::env::var_os("FUZZ_DEBUG").is_some() {
        for e in &first {
            eprintln!("{e:?}");
        }
    }
    let second = run(&script);
    assert_eq!(first, second, "same input, different events");
});
