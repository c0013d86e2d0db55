//! Added processing latency of a move (`cargo bench --bench latency`): from the byte that
//! completes a move on the board to its `move_made` event.
//!
//! A realistic capture (scanning board, human style, clock times every second) of a rapid game of
//! `tests/data/pgn` is synthesised; the engine is fed everything up to just before the 5-byte
//! FIELD_UPDATE frame that completes a move, then `decode + handle` of that frame is measured
//! (a fresh, prepared engine per iteration). Measured for one move early, in the middle and late
//! in the game.
//!
//! It also times decode (bytes/s) and the engine (observations/s) over the whole capture and
//! prints how many boards' full DGT line rate (9600 baud ≈ 960 bytes/s ≈ 192 field updates/s)
//! one core sustains.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use eboardd::capture::{Record, RecordKind};
use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::core::observation::{Micros, Observation};
use eboardd::driver::dgt::{self, DgtDecoder, DgtMessage};
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{SimConfig, synthesize};

/// DGT line rate at 9600 baud, 8N1: bytes per second.
const LINE_BYTES_PER_SEC: f64 = 960.0;
/// Field updates per second at line rate (5-byte frames).
const LINE_FIELDS_PER_SEC: f64 = LINE_BYTES_PER_SEC / 5.0;

/// A long rapid game with `[%clk]` times (about 100 plies).
fn sample_game() -> ScriptGame {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pgn/standard/fide-womens-world-rapid-2024_rounds01-05.pgn");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_games_bytes(&bytes)
        .into_iter()
        .map(|g| g.expect("corpus game"))
        .find(|g| (90..=130).contains(&g.moves.len()))
        .expect("a game of 90 to 130 plies")
}

/// Received chunks of the capture with their times.
fn rx_records(records: &[Record]) -> Vec<(Micros, Vec<u8>)> {
    records
        .iter()
        .filter_map(|r| match &r.kind {
            RecordKind::Rx(b) => Some((r.t, b.clone())),
            _ => None,
        })
        .collect()
}

/// The engine and decoder after feeding `rx[..upto]`, as the daemon would have them.
fn prepared(rx: &[(Micros, Vec<u8>)], upto: usize) -> (DgtDecoder, BoardEngine) {
    let mut decoder = DgtDecoder::new();
    let mut engine = BoardEngine::new(EngineConfig::default());
    let mut msgs = Vec::new();
    let mut events = Vec::new();
    for (t, bytes) in &rx[..upto] {
        msgs.clear();
        decoder.decode(bytes, &mut msgs);
        for m in &msgs {
            if let Some(o) = dgt::to_observation(m) {
                engine.handle(*t, &o, &mut events);
            }
        }
        events.clear();
    }
    (decoder, engine)
}

/// Indices of the rx records that are one 5-byte FIELD_UPDATE frame whose observation makes the
/// engine emit `move_made`, with the ply.
fn completing_frames(rx: &[(Micros, Vec<u8>)]) -> Vec<(usize, u32)> {
    let mut decoder = DgtDecoder::new();
    let mut engine = BoardEngine::new(EngineConfig::default());
    let mut msgs = Vec::new();
    let mut events = Vec::new();
    let mut found = Vec::new();
    for (i, (t, bytes)) in rx.iter().enumerate() {
        msgs.clear();
        events.clear();
        decoder.decode(bytes, &mut msgs);
        for m in &msgs {
            if let Some(o) = dgt::to_observation(m) {
                engine.handle(*t, &o, &mut events);
            }
        }
        let single_field =
            bytes.len() == 5 && matches!(msgs.as_slice(), [DgtMessage::FieldUpdate { .. }]);
        if let Some(ply) = events.iter().find_map(|e| match e.kind {
            EventKind::MoveMade { ply, .. } => Some(ply),
            _ => None,
        }) && single_field
        {
            found.push((i, ply));
        }
    }
    found
}

/// `decode + handle` of one received frame; returns whether `move_made` came out.
fn process(
    decoder: &mut DgtDecoder,
    engine: &mut BoardEngine,
    t: Micros,
    bytes: &[u8],
    msgs: &mut Vec<DgtMessage>,
    events: &mut Vec<CoreEvent>,
) -> bool {
    msgs.clear();
    events.clear();
    decoder.decode(bytes, msgs);
    for m in msgs.iter() {
        if let Some(o) = dgt::to_observation(m) {
            engine.handle(t, &o, events);
        }
    }
    events
        .iter()
        .any(|e| matches!(e.kind, EventKind::MoveMade { .. }))
}

fn latency(c: &mut Criterion) {
    let game = sample_game();
    let records = synthesize(&game, &SimConfig::human(7));
    let rx = rx_records(&records);
    let frames = completing_frames(&rx);
    println!(
        "latency: {} plies, {} rx records, {} moves completed by a lone FIELD_UPDATE frame",
        game.moves.len(),
        rx.len(),
        frames.len()
    );
    assert!(frames.len() >= 3, "too few move-completing frames");
    let picks = [
        ("early", frames[frames.len() / 10]),
        ("middle", frames[frames.len() / 2]),
        ("late", frames[frames.len() * 9 / 10]),
    ];
    let mut group = c.benchmark_group("latency");
    // Every iteration needs a freshly prepared engine (replaying the game so far, about a
    // millisecond, untimed): keep the iteration count modest so the setup does not dominate the
    // run; flat sampling gives every sample the same number of iterations.
    group.sampling_mode(SamplingMode::Flat);
    for (name, (idx, ply)) in picks {
        let (t, ref frame) = rx[idx];
        println!(
            "latency/{name}: ply {ply}, frame {}",
            frame.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let mut msgs = Vec::with_capacity(4);
        let mut events = Vec::with_capacity(16);
        group.bench_function(format!("move_made_{name}_ply{ply}"), |b| {
            b.iter_batched(
                || prepared(&rx, idx),
                |(mut decoder, mut engine)| {
                    let made = process(
                        &mut decoder,
                        &mut engine,
                        t,
                        black_box(frame),
                        &mut msgs,
                        &mut events,
                    );
                    assert!(made, "no move_made");
                    // Dropped outside the timing by iter_batched.
                    (decoder, engine)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    line_rate(&rx);
}

/// Decode and engine throughput over the whole capture, and boards per core at line rate.
fn line_rate(rx: &[(Micros, Vec<u8>)]) {
    let bytes: usize = rx.iter().map(|(_, b)| b.len()).sum();
    let mut obs: Vec<(Micros, Observation)> = Vec::new();
    {
        let mut decoder = DgtDecoder::new();
        let mut msgs = Vec::new();
        for (t, b) in rx {
            msgs.clear();
            decoder.decode(b, &mut msgs);
            obs.extend(msgs.iter().filter_map(dgt::to_observation).map(|o| (*t, o)));
        }
    }
    let budget = Duration::from_secs(2);

    let mut msgs = Vec::with_capacity(rx.len());
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < budget {
        let mut decoder = DgtDecoder::new();
        msgs.clear();
        for (_, b) in rx {
            decoder.decode(black_box(b), &mut msgs);
        }
        black_box(msgs.len());
        runs += 1;
    }
    let decode_ns_per_byte = start.elapsed().as_nanos() as f64 / (runs as f64 * bytes as f64);

    let mut events = Vec::with_capacity(8192);
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < budget {
        let mut engine = BoardEngine::new(EngineConfig::default());
        events.clear();
        for (t, o) in &obs {
            engine.handle(*t, black_box(o), &mut events);
        }
        black_box(events.len());
        runs += 1;
    }
    let handle_ns_per_obs = start.elapsed().as_nanos() as f64 / (runs as f64 * obs.len() as f64);

    // One board at full line rate: 960 bytes decoded and 192 observations handled per second.
    let ns_per_board_sec =
        LINE_BYTES_PER_SEC * decode_ns_per_byte + LINE_FIELDS_PER_SEC * handle_ns_per_obs;
    let boards = 1e9 / ns_per_board_sec;
    println!(
        "line rate: decode {decode_ns_per_byte:.1} ns/byte ({:.1} MB/s), engine {handle_ns_per_obs:.0} ns/observation ({:.0} obs/s) over {bytes} bytes / {} observations",
        1e3 / decode_ns_per_byte,
        1e9 / handle_ns_per_obs,
        obs.len()
    );
    println!(
        "line rate: one board at 9600 baud (960 B/s, 192 field updates/s) costs {:.1} µs of CPU per second => one core sustains ~{boards:.0} boards",
        ns_per_board_sec / 1e3
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(200))
        .sample_size(100);
    targets = latency
}
criterion_main!(benches);
