//! Lost field updates repaired by board dumps, at the real pace of the players (virtual time):
//! the emulated board (sans-IO) loses field updates on the line; the daemon's link state
//! machine ([`Link`]) and the core ([`Device`]) get the rest at script time. Every game must
//! come out exact without a single irregularity, and the dumps must cost well under 5% of the
//! 9600-baud line (960 bytes/s). Prints the line cost in bytes/s per board.

use std::time::{Duration, Instant};

use eboardd::core::event::EventKind;
use eboardd::driver::dgt::{DgtDecoder, DgtMessage};
use eboardd::replay::Device;
use eboardd::session::Note;
use eboardd::session::link::{Link, LinkConfig, LinkKind, game_explains};
use eboardd::sim::emulator::{Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::ScriptGame;
use eboardd::sim::{SimConfig, Style};

/// What a game through a lossy link gave.
struct Run {
    moves: Vec<String>,
    irregularities: Vec<String>,
    lost: u64,
    notes: Vec<Note>,
    /// Bytes of dump traffic (requests, mode commands sent with them, dumps back).
    dump_bytes: u64,
    dumps: [u64; 4],
    secs: f64,
}

fn run(game: &ScriptGame, style: Style, seed: u64, lose: &[f64], kind: LinkKind) -> Run {
    let mut game = game.clone();
    if style == Style::Blitz {
        // Blitz think times (1–12 s a move) rather than the rapid game's clock comments.
        game.clocks.clear();
        game.tags.retain(|(k, _)| k != "TimeControl");
    }
    let script = Script::from_games(
        std::slice::from_ref(&game),
        &SimConfig::new(style, seed),
        5_000_000,
    );
    let end = script.end();
    let n_updates = script
        .steps
        .iter()
        .filter(|(_, m)| matches!(m, DgtMessage::FieldUpdate { .. }))
        .count() as f64;
    let cfg = EmulatorConfig {
        lose_field_updates: lose.iter().map(|f| (f * n_updates) as u64).collect(),
        // A board on a Bluetooth link is a Bluetooth board: it answers the battery request.
        battery: (kind == LinkKind::Bluetooth).then_some(80),
        ..Default::default()
    };
    let mut em = Emulator::new(script, cfg);
    let base = Instant::now();
    let at = |t: i64| base + Duration::from_micros(t as u64);
    let mut dev = Device::new("b", kind.engine_config());
    let mut link = Link::new(
        &eboardd::driver::dgt::Dgt,
        LinkConfig::new(kind, Duration::from_secs(5), Duration::from_secs(20)),
        at(0),
    );
    let mut dec = DgtDecoder::new();
    let (mut events, mut msgs, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    let mut dump_bytes = 0u64;
    let mut out = Vec::new();
    em.host_input(&[0x4B, 0x42], &mut out);
    let mut t = 0;
    while t <= end + 3_000_000 {
        em.advance(t, &mut out);
        em.link_time(t, &mut out);
        if !out.is_empty() {
            link.on_rx(at(t));
            dev.receive(t, &out, &mut events);
            dec.decode(&out, &mut msgs);
            for m in msgs.drain(..) {
                if matches!(m, DgtMessage::BoardDump(_)) {
                    dump_bytes += 67;
                }
                notes.extend(link.on_message(at(t), &eboardd::driver::dgt::message(m)));
            }
            out.clear();
        }
        dev.engine.tick(t, &mut events);
        let mut tx = Vec::new();
        notes.extend(link.poll(at(t), &OneBoard(&dev.engine), &mut tx).unwrap());
        if !tx.is_empty() {
            dump_bytes += tx.iter().filter(|&&b| b == 0x42 || b == 0x4B).count() as u64;
            em.host_input(&tx, &mut out);
        }
        t += 20_000;
    }
    dev.engine.finish(t, &mut events);
    // The emulated board took every byte the daemon's link sent it.
    assert_eq!(
        em.unknown_bytes(),
        0,
        "bytes the board did not take: {:02x?}",
        em.unknown_sample()
    );
    let mut moves = Vec::new();
    let mut irregularities = Vec::new();
    for e in &events {
        match &e.kind {
            EventKind::MoveMade { ply, uci, .. } => {
                moves.truncate(*ply as usize - 1);
                moves.push(uci.to_string());
            }
            EventKind::MoveRetracted { ply } => moves.truncate(*ply as usize - 1),
            EventKind::Irregularity { code, detail, .. } => {
                irregularities.push(format!("{code}: {detail}"))
            }
            _ => {}
        }
    }
    Run {
        moves,
        irregularities,
        lost: em.field_updates_lost,
        notes,
        dump_bytes,
        dumps: link.stats.dumps,
        secs: end as f64 / 1e6,
    }
}

fn uci(game: &ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| {
            let u = shakmaty::uci::UciMove::from_move(*m, game.castling_mode).to_string();
            shakmaty::Position::play_unchecked(&mut pos, *m);
            u
        })
        .collect()
}

#[test]
fn lost_field_updates_are_repaired_by_dumps_without_irregularity_and_cheaply() {
    let games = eboardd::daemon::demo::demo_games();
    let lose = [0.2, 0.45, 0.7];
    let mut total_bytes = 0u64;
    let mut total_secs = 0.0;
    let mut repaired = 0;
    for (i, game) in games.iter().take(4).enumerate() {
        for (style, kind) in [
            (Style::Human, LinkKind::Wired),
            (Style::Blitz, LinkKind::Wired),
            (Style::Human, LinkKind::Bluetooth),
        ] {
            let clean = run(game, style, i as u64 + 1, &[], kind);
            let r = run(game, style, i as u64 + 1, &lose, kind);
            let what = format!("game {i} {style:?} {kind:?}");
            assert_eq!(r.lost, lose.len() as u64, "{what}");
            assert_eq!(r.moves, uci(game), "{what}: moves");
            // The players' own irregularities (e.g. a rook touched first in castling) are the
            // same with and without lost updates: the losses add none.
            assert_eq!(r.irregularities, clean.irregularities, "{what}");
            repaired += r
                .notes
                .iter()
                .filter(|n| matches!(n, Note::DumpDiffers { .. }))
                .count();
            let cost = r.dump_bytes as f64 / r.secs;
            assert!(cost < 48.0, "{what}: {cost:.1} B/s of dump traffic");
            eprintln!(
                "{what}: {:.0} s, dumps (bad frame, unexplained, quiet, reset) {:?}, {:.1} B/s",
                r.secs, r.dumps, cost
            );
            total_bytes += r.dump_bytes;
            total_secs += r.secs;
        }
    }
    // Most lost updates change what the board shows for longer than a scan; those are seen.
    assert!(repaired >= 12, "{repaired} dumps differed from the updates");
    eprintln!(
        "dump reconciliation line cost: {:.2} B/s per board ({:.2}% of 960 B/s)",
        total_bytes as f64 / total_secs,
        total_bytes as f64 / total_secs / 9.6
    );
}

/// The link's one board, as its core answers the link's questions.
struct OneBoard<'a>(&'a eboardd::core::engine::BoardEngine);

impl eboardd::driver::port::Boards for OneBoard<'_> {
    fn explains(
        &self,
        _unit: eboardd::driver::port::Unit,
        fields: &eboardd::core::observation::FieldArray,
    ) -> bool {
        game_explains(self.0, fields)
    }
    fn game_in_progress(&self, _unit: eboardd::driver::port::Unit) -> bool {
        false
    }
    fn at_game_start(&self, _unit: eboardd::driver::port::Unit) -> bool {
        false
    }
    fn away_for(&self, _unit: eboardd::driver::port::Unit) -> Option<Duration> {
        None
    }
    fn moves_missing(&self, _unit: eboardd::driver::port::Unit) -> bool {
        self.0.moves_missing_open()
    }
}
