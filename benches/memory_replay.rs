//! Cost of recovering a game from the board's memory (`cargo bench --bench memory_replay`): a
//! live game at its start position, then the memory of an 80-ply game (synthesised in human and
//! blitz style from a corpus game, with every field change and press the board logs) and the
//! board dump of the final position, as the daemon feeds them after the link was away.
//!
//! - `replay_80`: the `Memory` observation alone (the sandbox engine replays the memory);
//! - `recover_80`: `Memory` and the dump (replay, alignment, 80 plies recorded).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::observation::{FieldArray, MemoryEntry, Observation, SquareReading};
use eboardd::sim::memory::memory_of;
use eboardd::sim::pgn::parse_games_bytes;
use eboardd::sim::{SimConfig, Style, field_index, simulate};
use shakmaty::{Chess, Position};

const PLIES: usize = 80;

fn fields(pos: &Chess) -> Box<FieldArray> {
    let mut f = [SquareReading::Empty; 64];
    for (sq, p) in pos.board().iter() {
        f[usize::from(field_index(sq, false))] = SquareReading::Piece(p);
    }
    Box::new(f)
}

/// The first 80 plies of the first standard corpus game that has them, as the board's memory
/// (human or blitz style), with the final board.
fn memory(style: Style) -> (Vec<MemoryEntry>, Box<FieldArray>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pgn/standard/pychess_world_matches.pgn");
    let bytes = std::fs::read(&path).expect("corpus file");
    let game = parse_games_bytes(&bytes)
        .into_iter()
        .filter_map(Result::ok)
        .find(|g| g.tag("FEN").is_none() && g.moves.len() > PLIES)
        .expect("a long game");
    let moves = &game.moves[..PLIES];
    let mut cfg = SimConfig::new(style, 1);
    cfg.white_on_right = Some(false);
    let s = simulate(&game.start, moves, &[], None, &cfg);
    let mut end = game.start.clone();
    for m in moves {
        end.play_unchecked(*m);
    }
    (memory_of(&s.records), fields(&end))
}

/// A live engine at the start position of the game.
fn live() -> BoardEngine {
    let mut e = BoardEngine::new(EngineConfig::default());
    let mut out = Vec::new();
    e.handle(
        0,
        &Observation::BoardDump(fields(&Chess::default())),
        &mut out,
    );
    e
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory");
    for style in [Style::Human, Style::Blitz] {
        let (memory, end) = memory(style);
        // The bench measures what it says: the whole game comes back.
        let mut e = live();
        let mut out = Vec::new();
        e.handle(1_000_000, &Observation::Memory(memory.clone()), &mut out);
        e.handle(1_020_000, &Observation::BoardDump(end.clone()), &mut out);
        assert_eq!(e.games()[0].ply() as usize, PLIES);
        assert!(e.games()[0].moves.iter().all(|m| m.recovered));
        let name = format!("{style:?}").to_lowercase();
        g.bench_function(format!("replay_80_{name}_{}_entries", memory.len()), |b| {
            b.iter_batched(
                || (live(), Observation::Memory(memory.clone())),
                |(mut e, obs)| {
                    let mut out = Vec::new();
                    e.handle(1_000_000, black_box(&obs), &mut out);
                    e
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(format!("recover_80_{name}"), |b| {
            b.iter_batched(
                || {
                    (
                        live(),
                        Observation::Memory(memory.clone()),
                        Observation::BoardDump(end.clone()),
                    )
                },
                |(mut e, obs, dump)| {
                    let mut out = Vec::new();
                    e.handle(1_000_000, black_box(&obs), &mut out);
                    e.handle(1_020_000, black_box(&dump), &mut out);
                    (e, out)
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
