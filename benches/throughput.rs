//! Throughput of the pipeline on realistic simulated captures (`cargo bench`):
//!
//! - `dgt_decode`: DGT byte decoding, bytes/s over a capture's received bytes (whole buffer, and
//!   record by record as the replayer feeds it);
//! - `core`: the board state machine, observations/s over the decoded observation stream of a
//!   whole game fed into a fresh engine (with the clock reporting every second, and with clock
//!   reports at presses only, where field updates dominate);
//! - `replay`: capture replay through [`Replayer`] (decode + core), records/s over one capture and
//!   whole games/s over a batch of captures.
//!
//! The captures are synthesised from games of `tests/data/pgn` (human and blitz style on a
//! scanning board, clock times every second), so every run measures the same bytes.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eboardd::capture::{Capture, FORMAT, Header, Record, RecordKind, VERSION};
use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::CoreEvent;
use eboardd::core::observation::{Micros, Observation};
use eboardd::protocol::dgt::{self, DgtDecoder};
use eboardd::replay::Replayer;
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{SimConfig, Style, synthesize};

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

fn replay_all(captures: &[Capture]) -> usize {
    let mut moves = 0;
    for cap in captures {
        let mut replayer = Replayer::new(EngineConfig::default());
        let mut sink = |_: &str, _: &CoreEvent| Ok(());
        replayer.replay_capture(cap, &mut sink).expect("replay");
        replayer.finish(&mut sink).expect("finish");
        moves += replayer
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
        b.iter(|| replay_all(black_box(&one)))
    });
    // Whole games: 20 games of the Dortmund file, every 17th, human style.
    let batch: Vec<Capture> = corpus("standard/pychess_dortmund.pgn")
        .iter()
        .step_by(17)
        .take(20)
        .enumerate()
        .map(|(i, g)| capture_of(records_of(g, Style::Human, 100 + i as u64)))
        .collect();
    let plies: usize = replay_all(&batch);
    let records: usize = batch.iter().map(|c| c.records.len()).sum();
    println!(
        "replay: batch of {} games, {plies} plies, {records} records",
        batch.len()
    );
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_function("games_20_dortmund", |b| {
        b.iter(|| replay_all(black_box(&batch)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = dgt_decode, core, replay
}
criterion_main!(benches);
