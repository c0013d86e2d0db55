//! Throughput of the pipeline on realistic simulated captures (`cargo bench`):
//!
//! - `dgt_decode`: DGT byte decoding, bytes/s over a capture's received bytes (whole buffer, and
//!   record by record as the replayer feeds it);
//! - `core`: the board state machine, observations/s over the decoded observation stream of a
//!   whole game fed into a fresh engine (with the clock reporting every second, and with clock
//!   reports at presses only, where field updates dominate);
//! - `replay`: capture replay through [`Playback`] (decode + core), records/s over one capture and
//!   whole games/s over a batch of captures;
//! - `round_replay`: a whole round, 200 boards each playing a full game (`board-1`..`board-200`,
//!   records merged by time into one capture) replayed through one [`Playback`], games/s;
//! - `move_cost`: the core's cost of one move fed into a prepared engine, for an ordinary move,
//!   a rook sliding over intermediate squares, and rook-first castling.
//!
//! The captures are synthesised from games of `tests/data/pgn` (human and blitz style on a
//! scanning board, clock times every second), so every run measures the same bytes.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use eboardd::capture::{Capture, FORMAT, Header, Record, RecordKind, VERSION};
use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::CoreEvent;
use eboardd::core::observation::{Micros, Observation, SquareReading};
use eboardd::driver::dgt::{self, DgtDecoder};
use eboardd::replay::{Playback, Timeline};
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{SimConfig, Style, field_index, synthesize};
use shakmaty::{Board, Color, Piece, Role, Square};

/// Every game of one corpus file.
fn corpus(file: &str) -> Vec<ScriptGame> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pgn")
        .join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_games_bytes(&bytes)
        .into_iter()
        .map(|g| g.expect("corpus game"))
        .collect()
}

/// A realistic capture of `game`: scanning board, clock times every second.
fn records_of(game: &ScriptGame, style: Style, seed: u64) -> Vec<Record> {
    records_with(game, style, seed, true)
}

/// A capture of `game`; `ticks`: the clock reports its times every second (else at presses only).
fn records_with(game: &ScriptGame, style: Style, seed: u64, ticks: bool) -> Vec<Record> {
    let cfg = SimConfig {
        clock_ticks: Some(ticks),
        ..SimConfig::new(style, seed)
    };
    synthesize(game, &cfg)
}

fn capture_of(records: Vec<Record>) -> Capture {
    Capture {
        header: Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            extra: serde_json::Map::new(),
        },
        records,
        warnings: Vec::new(),
    }
}

/// The received byte chunks of a capture, one per record.
fn rx_chunks(records: &[Record]) -> Vec<&[u8]> {
    records
        .iter()
        .filter_map(|r| match &r.kind {
            RecordKind::Rx(b) => Some(b.as_slice()),
            _ => None,
        })
        .collect()
}

/// The decoded observation stream of a capture, with times.
fn observations(records: &[Record]) -> Vec<(Micros, Observation)> {
    let mut decoder = DgtDecoder::new();
    let mut messages = Vec::new();
    let mut out = Vec::new();
    for r in records {
        if let RecordKind::Rx(bytes) = &r.kind {
            messages.clear();
            decoder.decode(bytes, &mut messages);
            out.extend(
                messages
                    .iter()
                    .filter_map(dgt::to_observation)
                    .map(|o| (r.t, o)),
            );
        }
    }
    out
}

/// A long rapid game with `[%clk]` times (about 100 plies).
fn sample_game() -> ScriptGame {
    corpus("standard/fide-womens-world-rapid-2024_rounds01-05.pgn")
        .into_iter()
        .find(|g| (90..=130).contains(&g.moves.len()))
        .expect("a game of 90 to 130 plies")
}

fn dgt_decode(c: &mut Criterion) {
    let records = records_of(&sample_game(), Style::Human, 1);
    let chunks = rx_chunks(&records);
    let bytes: Vec<u8> = chunks.concat();
    println!(
        "dgt_decode: {} bytes in {} records ({} plies)",
        bytes.len(),
        chunks.len(),
        sample_game().moves.len()
    );
    let mut group = c.benchmark_group("dgt_decode");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    let mut out = Vec::with_capacity(records.len());
    group.bench_function("capture_rx_whole_buffer", |b| {
        b.iter(|| {
            let mut decoder = DgtDecoder::new();
            out.clear();
            decoder.decode(black_box(&bytes), &mut out);
            out.len()
        })
    });
    group.bench_function("capture_rx_per_record", |b| {
        b.iter(|| {
            let mut decoder = DgtDecoder::new();
            out.clear();
            for chunk in &chunks {
                decoder.decode(black_box(chunk), &mut out);
            }
            out.len()
        })
    });
    group.finish();
}

fn core(c: &mut Criterion) {
    let game = sample_game();
    let mut group = c.benchmark_group("core");
    let streams = [
        ("human_game", Style::Human, true),
        ("blitz_game", Style::Blitz, true),
        ("human_game_no_clock_ticks", Style::Human, false),
    ];
    for (name, style, ticks) in streams {
        let obs = observations(&records_with(&game, style, 2, ticks));
        let end = obs.last().map_or(0, |(t, _)| *t);
        let fields = obs
            .iter()
            .filter(|(_, o)| matches!(o, Observation::Field { .. }))
            .count();
        println!(
            "core/{name}: {} observations ({fields} field updates)",
            obs.len()
        );
        group.throughput(Throughput::Elements(obs.len() as u64));
        let mut events: Vec<CoreEvent> = Vec::with_capacity(4096);
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut engine = BoardEngine::new(EngineConfig::default());
                events.clear();
                for (t, o) in &obs {
                    engine.handle(*t, black_box(o), &mut events);
                }
                engine.finish(end, &mut events);
                assert_eq!(engine.games()[0].moves.len(), game.moves.len());
                events.len()
            })
        });
    }
    group.finish();
}

/// Replays each capture (owned: a replay takes its records, as `eboardd replay` takes those it
/// read; the benchmarks clone them outside the timing) and counts the moves.
fn replay_all(captures: Vec<Capture>) -> usize {
    let mut moves = 0;
    for cap in captures {
        let mut sink = |_: &str, _: &CoreEvent| Ok(());
        let session = Playback::play(Timeline::from_capture(cap), &mut sink).expect("replay");
        moves += session
            .devices()
            .flat_map(|d| d.engine.games())
            .map(|g| g.moves.len())
            .sum::<usize>();
    }
    moves
}

fn replay(c: &mut Criterion) {
    let game = sample_game();
    let one = [capture_of(records_of(&game, Style::Human, 3))];
    println!("replay: {} records in one capture", one[0].records.len());
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(one[0].records.len() as u64));
    group.bench_function("records_one_game", |b| {
        b.iter_batched(
            || one.to_vec(),
            |c| replay_all(black_box(c)),
            BatchSize::LargeInput,
        )
    });
    // Whole games: 20 games of the Dortmund file, every 17th, human style.
    let batch: Vec<Capture> = corpus("standard/pychess_dortmund.pgn")
        .iter()
        .step_by(17)
        .take(20)
        .enumerate()
        .map(|(i, g)| capture_of(records_of(g, Style::Human, 100 + i as u64)))
        .collect();
    let plies: usize = replay_all(batch.to_vec());
    let records: usize = batch.iter().map(|c| c.records.len()).sum();
    println!(
        "replay: batch of {} games, {plies} plies, {records} records",
        batch.len()
    );
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_function("games_20_dortmund", |b| {
        b.iter_batched(
            || batch.to_vec(),
            |c| replay_all(black_box(c)),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Distinct corpus games synthesised for the round (boards beyond that would reuse them).
const ROUND_DISTINCT: usize = 200;
/// Boards in the round.
const ROUND_BOARDS: usize = 200;

fn round_replay(c: &mut Criterion) {
    let started = std::time::Instant::now();
    let games: Vec<ScriptGame> = [
        "standard/pychess_dortmund.pgn",
        "standard/pychess_world_matches.pgn",
        "standard/fide-womens-world-rapid-2024_rounds01-05.pgn",
    ]
    .iter()
    .flat_map(|f| corpus(f))
    .filter(|g| g.moves.len() >= 40)
    .take(ROUND_DISTINCT)
    .collect();
    assert_eq!(games.len(), ROUND_DISTINCT, "enough corpus games");
    let distinct: Vec<Vec<Record>> = games
        .iter()
        .enumerate()
        .map(|(i, g)| records_of(g, Style::Human, 500 + i as u64))
        .collect();
    let mut records: Vec<Record> = Vec::new();
    let mut expected_plies = 0;
    for board in 0..ROUND_BOARDS {
        let k = board % ROUND_DISTINCT;
        expected_plies += games[k].moves.len();
        let dev = format!("board-{}", board + 1);
        records.extend(distinct[k].iter().map(|r| Record {
            dev: dev.clone(),
            ..r.clone()
        }));
    }
    // A round: every board plays at once, records merged by time (stable: per-board order kept).
    records.sort_by_key(|r| r.t);
    let round = [capture_of(records)];
    let plies = replay_all(round.to_vec());
    assert_eq!(plies, expected_plies, "every board's game replayed");
    println!(
        "round_replay: {ROUND_BOARDS} boards ({ROUND_DISTINCT} distinct games), {plies} plies, {} records, built in {:?}",
        round[0].records.len(),
        started.elapsed()
    );
    let mut group = c.benchmark_group("round_replay");
    group.throughput(Throughput::Elements(ROUND_BOARDS as u64));
    group.bench_function("boards_200_merged", |b| {
        b.iter_batched(
            || round.to_vec(),
            |c| replay_all(black_box(c)),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn lift(sq: Square) -> Observation {
    Observation::Field {
        index: field_index(sq, false),
        reading: SquareReading::Empty,
    }
}

fn place(sq: Square, color: Color, role: Role) -> Observation {
    Observation::Field {
        index: field_index(sq, false),
        reading: SquareReading::Piece(Piece { color, role }),
    }
}

/// Observations 10 ms apart.
const STEP: Micros = 10_000;

/// A prepared engine: standard start dumped, then `prefix` played as lift/place pairs. Returns
/// the engine, the last time fed and the event buffer.
fn engine_after(prefix: &[(Square, Square)]) -> (BoardEngine, Micros, Vec<CoreEvent>) {
    let mut engine = BoardEngine::new(EngineConfig::default());
    let mut events = Vec::with_capacity(64);
    let mut board = Board::default();
    let mut fields = [SquareReading::Empty; 64];
    for (sq, p) in board.iter() {
        fields[field_index(sq, false) as usize] = SquareReading::Piece(p);
    }
    let mut t = STEP;
    engine.handle(t, &Observation::BoardDump(Box::new(fields)), &mut events);
    for &(from, to) in prefix {
        let piece = board.remove_piece_at(from).expect("a piece to move");
        board.set_piece_at(to, piece);
        t += STEP;
        engine.handle(t, &lift(from), &mut events);
        t += STEP;
        engine.handle(t, &place(to, piece.color, piece.role), &mut events);
    }
    (engine, t, events)
}

fn feed_move(
    (mut engine, t, mut events): (BoardEngine, Micros, Vec<CoreEvent>),
    obs: &[Observation],
) -> BoardEngine {
    let mut t = t;
    for o in obs {
        t += STEP;
        engine.handle(t, black_box(o), &mut events);
    }
    engine
}

fn last_san(engine: &BoardEngine) -> String {
    engine
        .games()
        .last()
        .and_then(|g| g.moves.last())
        .map(|m| m.san.clone())
        .unwrap_or_default()
}

/// A `move_cost` case: name, moves played before, the move's observations, its expected SAN.
type MoveCase = (
    &'static str,
    &'static [(Square, Square)],
    Vec<Observation>,
    &'static str,
);

fn move_cost(c: &mut Criterion) {
    use Square::*;
    let italian: &[(Square, Square)] =
        &[(E2, E4), (E7, E5), (G1, F3), (B8, C6), (F1, C4), (G8, F6)];
    let h_file: &[(Square, Square)] = &[(H2, H4), (A7, A5), (H4, H5), (A5, A4)];
    let cases: [MoveCase; 3] = [
        (
            "ordinary_knight",
            italian,
            vec![lift(B1), place(C3, Color::White, Role::Knight)],
            "Nc3",
        ),
        (
            "sliding_rook",
            h_file,
            vec![
                lift(H1),
                place(H2, Color::White, Role::Rook),
                lift(H2),
                place(H3, Color::White, Role::Rook),
                lift(H3),
                place(H4, Color::White, Role::Rook),
            ],
            "Rh4",
        ),
        (
            "castling_rook_first",
            italian,
            vec![
                lift(H1),
                place(F1, Color::White, Role::Rook),
                lift(E1),
                place(G1, Color::White, Role::King),
            ],
            "O-O",
        ),
    ];
    let mut group = c.benchmark_group("move_cost");
    group.throughput(Throughput::Elements(1));
    for (name, prefix, obs, san) in &cases {
        let engine = feed_move(engine_after(prefix), obs);
        assert_eq!(
            engine.games().last().map(|g| g.moves.len()),
            Some(prefix.len() + 1),
            "{name}: one move recorded after the prefix"
        );
        assert_eq!(last_san(&engine), *san, "{name}: the expected move");
        group.bench_function(*name, |b| {
            b.iter_batched(
                || engine_after(prefix),
                |prepared| feed_move(prepared, obs),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = dgt_decode, core, replay, round_replay, move_cost
}
criterion_main!(benches);
