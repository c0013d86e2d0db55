//! A board rebuilt from its capture (a restart, a day's file continued): replayed from its last
//! resume point, or from the start when the point does not hold, then shown in the hub
//! without publishing; the resume points it takes as it goes; the round each of its games
//! belongs to.

use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use crate::capture::{Capture, DeviceEntry, Header, HeaderFields};
use crate::core::engine::seed::EngineSeed;
use crate::core::event::{CoreEvent, EventKind};
use crate::daemon::captures::CaptureStore;
use crate::daemon::captures::resume::{self, ResumePoint};
use crate::device::Device;
use crate::output::{Hub, LinkState};
use crate::pgn::TagUpdate;
use crate::replay::{Playback, Replayed, Timeline};
use crate::session::link::LinkKind;

use super::{BoardMeta, LiveBoard};

impl LiveBoard {
    /// Opens the board's capture for today (or continues the file given, e.g. one of an
    /// earlier day whose game is still running), rebuilding its games from what is there by
    /// replaying it ([`Playback`], as `eboardd replay` does, without publishing: the events
    /// happened in an earlier run; [`LiveBoard::restore_into`] shows them in the hub). The
    /// board is set up as replay sets it up from the capture's header: the header of a new file
    /// names the driver, unit and link given here (a Bluetooth board scans at half speed, so
    /// its core's settle windows are doubled), a continued file keeps its own.
    pub fn open(
        store: &CaptureStore,
        id: &str,
        meta: BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
    ) -> io::Result<LiveBoard> {
        let header = meta.clone();
        Self::open_with(store, id, &header, continue_file, link, |_| Some(meta))
    }

    /// [`LiveBoard::open`], with the board's metadata made once its capture is read:
    /// `finish` is given the board as its capture left it (see
    /// [`LiveBoard::recorded_number`]) and gives its metadata, or `None` when the board is
    /// not wanted after all (it is left without metadata; nothing more is written to its
    /// capture). `meta` is what a new file's header says.
    pub fn open_with(
        store: &CaptureStore,
        id: &str,
        meta: &BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
        finish: impl FnOnce(&LiveBoard) -> Option<BoardMeta>,
    ) -> io::Result<LiveBoard> {
        let mut board = match Self::read_back(store, id, meta, continue_file, link, true)? {
            Some(b) => b,
            None => Self::read_back(store, id, meta, continue_file, link, false)?
                .ok_or_else(|| io::Error::other("capture not read back"))?,
        };
        if let Some(meta) = finish(&board) {
            board.set_meta(meta)?;
        }
        Ok(board)
    }

    /// The board as its capture leaves it: going on from the capture's resume point when
    /// `resume` and it holds, else replaying every record. `None`: the resume point's seed
    /// did not read back (the caller replays every record).
    fn read_back(
        store: &CaptureStore,
        id: &str,
        meta: &BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
        resume: bool,
    ) -> io::Result<Option<LiveBoard>> {
        let path = match continue_file {
            Some(p) => p.to_path_buf(),
            None => store.path_for(crate::daemon::captures::today(), id),
        };
        let header = new_header(id, meta, link);
        let opened = if resume {
            store.open_resuming(&path, header.clone())?
        } else {
            store.open(&path, header.clone())?
        };
        let rebuilt = opened.existing.is_some();
        let point = opened.resumed;
        let cap = to_replay(opened.existing, header, point.as_ref());
        let records = cap.records.len();
        let Some((replayed, clock_seen)) = replay(id, cap, point.as_ref())? else {
            return Ok(None);
        };
        let white_clock = replayed
            .white_clock
            .or_else(|| point.as_ref().and_then(|p| p.white_clock));
        let rounds = rounds_of(&replayed, point.as_ref());
        let board = LiveBoard {
            id: id.to_string(),
            device: replayed.device,
            capture: opened.file,
            clock_seen,
            battery: None,
            connection: LinkState::Unknown,
            port: None,
            tags_written: replayed.tags.unwrap_or_else(|| meta.tags()),
            side_written: white_clock,
            meta: BoardMeta::default(),
            events: Vec::new(),
            owner: None,
            away_since: None,
            counters_at_claim: (0, 0),
            side_recorded: white_clock,
            resume_tries: 0,
            resumed_from: point.as_ref().map(|p| (p.offset, p.engine.first_game())),
            rounds,
        };
        board.log_read_back(point.as_ref(), rebuilt, records);
        Ok(Some(board))
    }

    /// Says how the board was read back: from its resume point `point` (with the `records`
    /// after it), or `rebuilt` from its capture's `records` (nothing said of a new file).
    fn log_read_back(&self, point: Option<&ResumePoint>, rebuilt: bool, records: usize) {
        let games = self.device.engine.games();
        if let Some(p) = point {
            tracing::info!(
                "{}: went on from its resume point at byte {} of {} ({} records after it, game {} with {} move(s))",
                self.id,
                p.offset,
                self.capture.path().display(),
                records,
                games.last().map_or(0, |g| g.number),
                games.last().map_or(0, |g| g.ply())
            );
        } else if rebuilt {
            tracing::info!(
                "{}: rebuilt from {} ({} records, {} game(s), {} move(s) in the last)",
                self.id,
                self.capture.path().display(),
                records,
                games.len(),
                games.last().map_or(0, |g| g.ply())
            );
        }
    }

    /// Where the rebuild went on from a resume point: the capture's offset and the first game
    /// the point kept (`None`: every record was replayed, every game is here).
    pub fn resumed_from(&self) -> Option<(u64, Option<u32>)> {
        self.resumed_from
    }

    /// Takes a resume point now, when the board is at rest ([`resume`]): the decoder holds
    /// nothing and the core's seed checks itself; `true` when one was written.
    pub fn take_resume_point(&mut self) -> bool {
        if !self.device.at_rest() || self.capture.lost() > 0 {
            return false;
        }
        let Some(engine) = EngineSeed::of(&self.device.engine) else {
            return false;
        };
        let written = self.capture.resume_at().and_then(|(offset, before)| {
            let point = ResumePoint {
                offset,
                before,
                created: self.capture.created().timestamp_micros(),
                last_t: self.capture.last_t(),
                clock_seen: self.clock_seen,
                tags: TagUpdate::of(&self.tags_written).to_json(),
                white_clock: self.side_recorded,
                engine,
                rounds: self.game_rounds(),
            };
            resume::save(self.capture.path(), &point, self.capture.fsync())
        });
        match written {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{}: cannot write its resume point: {e}", self.id);
                false
            }
        }
    }

    /// After the records of a game start: tries a resume point while tries are left.
    pub(super) fn maybe_resume_point(&mut self) {
        if self.resume_tries > 0 {
            self.resume_tries -= 1;
            if self.take_resume_point() {
                self.resume_tries = 0;
            }
        }
    }

    /// Shows the board as rebuilt from its capture in the hub (its games and health), without
    /// publishing: those events went out in an earlier run.
    pub fn restore_into(&mut self, hub: &Hub) {
        let rounds: Vec<Option<u32>> = self.game_rounds().into_iter().map(|(_, r)| r).collect();
        hub.restore(&self.id, self.games(), &rounds, self.status());
        self.device.engine.forget_finished();
    }

    /// The round of each game the core keeps, in order, by game number.
    fn game_rounds(&self) -> Vec<(u32, Option<u32>)> {
        self.games()
            .iter()
            .map(|g| {
                let r = self.rounds.iter().find(|(n, _)| *n == g.number);
                (g.number, r.and_then(|(_, r)| *r))
            })
            .collect()
    }

    /// After events: a game started or a move made tags the latest game with the round in
    /// force (the replay tags a game with the tags at its last move).
    pub(super) fn note_round(&mut self, events: &[CoreEvent]) {
        let tags_game = events.iter().any(|e| {
            matches!(
                e.kind,
                EventKind::GameStarted { .. } | EventKind::MoveMade { .. }
            )
        });
        let Some(latest) = self.device.engine.games().last().map(|g| g.number) else {
            return;
        };
        if !tags_game {
            return;
        }
        let round = self
            .tags_written
            .round
            .as_deref()
            .and_then(crate::replay::round_number);
        let kept: Vec<u32> = self.games().iter().map(|g| g.number).collect();
        self.rounds
            .retain(|(n, _)| *n != latest && kept.contains(n));
        self.rounds.push((latest, round));
    }
}

/// The header of a new capture for board `id`: its tags, and one device with the driver, serial
/// number, link and unit of `meta` (the default driver when it names none).
fn new_header(id: &str, meta: &BoardMeta, link: LinkKind) -> Map<String, Value> {
    let driver = meta
        .driver
        .and_then(crate::family::driver)
        .unwrap_or_else(crate::family::default_driver);
    HeaderFields {
        board: Some(id.to_string()),
        tags: Some(meta.tag_update()),
        devices: vec![DeviceEntry {
            id: id.to_string(),
            driver: Some(driver.name().to_string()),
            serial: meta.serial.clone(),
            link: Some(link.name().to_string()),
            address: meta.unit,
            ..Default::default()
        }],
    }
    .to_map()
}

/// What there is to replay: the capture read (`existing`, with the tags in force at `point`
/// as its header's when it goes on from one), or a new file's `header` and no record.
fn to_replay(
    existing: Option<Capture>,
    header: Map<String, Value>,
    point: Option<&ResumePoint>,
) -> Capture {
    let mut cap = existing.unwrap_or_else(|| Capture {
        header: Header::new(header),
        records: Vec::new(),
        warnings: Vec::new(),
    });
    if let Some(p) = point {
        // The tags in force at the point are the tail's start.
        cap.header.extra.insert("tags".into(), p.tags.clone());
    }
    cap
}

/// Replays `cap` for board `id`, its core seeded from `point` first when the capture goes on
/// from one: the board as the records leave it, and whether its clock was seen (at the point
/// or since). `None`: the point's seed does not read back.
fn replay(
    id: &str,
    cap: Capture,
    point: Option<&ResumePoint>,
) -> io::Result<Option<(Replayed, bool)>> {
    let mut session = Playback::new(Timeline::from_capture(cap));
    // A board with no record after its point is not in the tail's plan: seeded after.
    let mut seed_after = None;
    if let Some(p) = point {
        match session.device_mut(id) {
            Some(device) => {
                if !seeded(id, device, p) {
                    return Ok(None);
                }
            }
            None => seed_after = Some(p),
        }
    }
    let mut clock_seen = point.is_some_and(|p| p.clock_seen);
    session.run(&mut |board, e| {
        clock_seen |= board == id && matches!(e.kind, EventKind::Clock { .. });
        Ok(())
    })?;
    for w in session.warnings() {
        tracing::warn!("{id}: {w}");
    }
    let mut replayed = session.into_board(id);
    if let Some(p) = seed_after
        && !seeded(id, &mut replayed.device, p)
    {
        return Ok(None);
    }
    Ok(Some((replayed, clock_seen)))
}

/// Seeds board `id`'s core from `point`; `false` (said in the log) when the seed does not
/// read back.
fn seeded(id: &str, device: &mut Device, point: &ResumePoint) -> bool {
    let engine = point.engine.engine(device.engine.config().clone());
    engine
        .map(|engine| device.engine = engine)
        .map_err(|e| {
            tracing::warn!(
                "{id}: its resume point does not read back ({e}): replaying the whole capture"
            );
        })
        .is_ok()
}

/// The round of each game the replayed board keeps: a game's round is the tail's when it has
/// a move there, else the one `point` saved.
fn rounds_of(replayed: &Replayed, point: Option<&ResumePoint>) -> Vec<(u32, Option<u32>)> {
    replayed
        .device
        .engine
        .games()
        .iter()
        .zip(replayed.rounds.iter().chain(std::iter::repeat(&None)))
        .map(|(g, &tail)| {
            let saved = point.and_then(|p| {
                let moved = g.moves.last().is_some_and(|m| m.made_at > p.last_t);
                let saved = p.rounds.iter().find(|(n, _)| *n == g.number);
                saved.filter(|_| !moved).map(|(_, r)| *r)
            });
            (g.number, saved.unwrap_or(tail))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::RecordKind;
    use crate::core::game::GameRecord;
    use crate::core::observation::{ClockSide, OperatorAction};
    use crate::daemon::captures::CaptureStore;
    use crate::daemon::captures::resume::{self, ResumePoint};
    use crate::session::link::LinkKind;
    use crate::sim::{SimConfig, pgn::parse_games, synthesize};
    use serde_json::Value;
    use std::path::PathBuf;

    /// Three games played through a board, game N in round N: its capture (with a resume
    /// point at the last game's start).
    fn three_games(store: &CaptureStore, id: &str, meta: &BoardMeta) -> PathBuf {
        let hub = Hub::new(crate::output::RoundInfo::default(), Default::default());
        let mut b = LiveBoard::open(store, id, meta.clone(), None, LinkKind::Wired).unwrap();
        b.set_connection(LinkState::Active, Some("/dev/ttyACM0"), &hub)
            .unwrap();
        let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0\n\n1. d4 d5 2. c4 e6 3. Nc3 Nf6 0-1\n\n1. c4 c5 2. Nc3 Nc6 3. g3 *";
        let mut off = 0;
        for (i, game) in parse_games(pgn).into_iter().enumerate() {
            // The arbiter loads the next round before the game.
            b.set_meta(BoardMeta {
                round: Some(format!("{}.2", i + 1)),
                ..meta.clone()
            })
            .unwrap();
            let records = synthesize(&game.unwrap(), &SimConfig::human(i as u64 + 7));
            for r in &records {
                match &r.kind {
                    RecordKind::Rx(bytes) => {
                        b.rx(off + r.t, bytes, &hub).unwrap();
                    }
                    RecordKind::Tx(bytes) => b.tx(off + r.t, bytes).unwrap(),
                    _ => {}
                }
            }
            off += records.last().unwrap().t + 30_000_000;
        }
        assert_eq!(b.summary(), (3, 5), "the third game is being played");
        b.capture_path().to_path_buf()
    }

    /// What a board's rebuild kept, to compare: its last game, the first game it holds, and
    /// whether it went on from a resume point.
    fn kept(b: &LiveBoard) -> (String, u32, bool) {
        let games = b.games();
        (
            format!("{:?}", games.last().unwrap()),
            games.first().unwrap().number,
            b.resumed_from().is_some(),
        )
    }

    #[test]
    fn a_resume_point_that_does_not_hold_means_the_whole_capture_is_replayed() {
        let dir = std::env::temp_dir().join(format!("eboardd-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = CaptureStore {
            dir: dir.clone(),
            fsync: false,
            bytes: None,
        };
        let meta = BoardMeta {
            number: Some(2),
            white_clock: Some(ClockSide::Left),
            ..Default::default()
        };
        let path = three_games(&store, "board-2", &meta);
        let sidecar = resume::path_of(&path);
        let good = std::fs::read_to_string(&sidecar).expect("a resume point was written");
        let point: ResumePoint = serde_json::from_str(&good).unwrap();
        // Taken when game 3 started: the board keeps its last two games.
        assert_eq!(point.engine.first_game(), Some(2));
        let reopen = |resume: bool| {
            LiveBoard::read_back(&store, "board-2", &meta, None, LinkKind::Wired, resume)
                .unwrap()
                .expect("read back")
        };
        // Each game goes back to its own round (the round in force at its last move).
        let rounds_in = |b: &mut LiveBoard| {
            let info = crate::output::RoundInfo {
                round: 3,
                ..Default::default()
            };
            let hub = Hub::new(info, Default::default());
            b.restore_into(&hub);
            hub.with_round(|r| {
                (1..=3)
                    .map(|n| {
                        let pgn = crate::output::render::round_pgn_of(r, n);
                        (
                            pgn.matches("[Event ").count(),
                            pgn.contains(&format!("[Round \"{n}.2\"]")),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        };
        let mut full = reopen(false);
        assert_eq!(full.games().len(), 3);
        let (last, _, _) = kept(&full);
        assert_eq!(rounds_in(&mut full), vec![(1, true), (1, true), (1, true)]);
        let full = reopen(false);
        // The point holds: the board goes on from it with the same last game.
        let resumed = reopen(true);
        assert_eq!(resumed.resumed_from(), Some((point.offset, Some(2))));
        assert_eq!(kept(&resumed), (last.clone(), 2, true));
        let mut resumed = resumed;
        // Game 1 is read back later (the daemon's earlier games); 2 and 3 are in their rounds.
        assert_eq!(
            rounds_in(&mut resumed),
            vec![(0, false), (1, true), (1, true)]
        );
        drop(resumed);

        // Points that do not hold, each: the whole capture is replayed, every game is back.
        let mut stale = point.clone();
        stale.before ^= 1;
        let mut other_file = point.clone();
        other_file.created += 1;
        let mut past_end = point.clone();
        past_end.offset = std::fs::metadata(&path).unwrap().len() + 10;
        let mut bad_seed: Value = serde_json::from_str(&good).unwrap();
        bad_seed["engine"]["sensed"] = "not a board".into();
        let damaged = [
            ("garbage", "not json at all".to_string()),
            ("cut off", good[..good.len() / 2].to_string()),
            ("empty", String::new()),
            ("stale fingerprint", serde_json::to_string(&stale).unwrap()),
            (
                "another file's",
                serde_json::to_string(&other_file).unwrap(),
            ),
            ("past the end", serde_json::to_string(&past_end).unwrap()),
            ("a seed that does not read", bad_seed.to_string()),
        ];
        for (what, text) in damaged {
            std::fs::write(&sidecar, text).unwrap();
            let b = reopen(true);
            assert_eq!(kept(&b), (last.clone(), 1, false), "{what}");
            assert_eq!(b.games().len(), 3, "{what}");
            for (a, z) in b.games().iter().zip(full.games()) {
                assert_eq!(format!("{a:?}"), format!("{z:?}"), "{what}");
            }
        }
        // No point at all: the same.
        std::fs::remove_file(&sidecar).unwrap();
        assert_eq!(kept(&reopen(true)), (last, 1, false));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn captures_then_rebuilds_the_same_board() {
        let dir = std::env::temp_dir().join(format!("eboardd-board-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = CaptureStore {
            dir: dir.clone(),
            fsync: false,
            bytes: None,
        };
        let game = parse_games("1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O *")
            .remove(0)
            .unwrap();
        let records = synthesize(&game, &SimConfig::human(3));
        let hub = Hub::new(crate::output::RoundInfo::default(), Default::default());
        let mut rx = hub.receiver();
        let meta = BoardMeta {
            number: Some(4),
            serial: Some("12345".into()),
            white: Some("White, A".into()),
            white_clock: Some(ClockSide::Left),
            ..Default::default()
        };
        let mut b =
            LiveBoard::open(&store, "board-4", meta.clone(), None, LinkKind::Wired).unwrap();
        b.set_connection(LinkState::Active, Some("/dev/ttyACM0"), &hub)
            .unwrap();
        for r in &records {
            match &r.kind {
                RecordKind::Rx(bytes) => {
                    b.rx(r.t, bytes, &hub).unwrap();
                }
                RecordKind::Tx(bytes) => b.tx(r.t, bytes).unwrap(),
                _ => {}
            }
        }
        let live = b.games().to_vec();
        let last_move =
            |games: &[GameRecord]| games.last().unwrap().moves.last().unwrap().san.clone();
        assert_eq!(last_move(&live), "O-O");
        assert_eq!(live.last().unwrap().ply(), 9);
        let status = b.status();
        assert_eq!(status.state, LinkState::Active);
        assert_eq!(status.clock_connected, Some(true));
        // The hub's board view follows what was published.
        hub.with_round(|r| {
            let v = r.board("board-4").unwrap();
            assert_eq!(v.game().unwrap().ply(), 9);
            assert_eq!(v.status, status);
        });
        let mut n = 0;
        let mut last = 0;
        while let Ok(msg) = rx.try_recv() {
            assert_eq!(msg.seq, last + 1);
            last = msg.seq;
            n += 1;
        }
        assert!(n > 20, "{n} events");
        assert_eq!(hub.last_seq(), last);
        let path = b.capture_path().to_path_buf();
        drop(b);

        // A restart: the same file, rebuilt, nothing new written for the same configuration.
        let len = std::fs::metadata(&path).unwrap().len();
        let mut again = LiveBoard::open(&store, "board-4", meta, None, LinkKind::Wired).unwrap();
        assert_eq!(again.capture_path(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        let fen =
            |games: &[GameRecord]| crate::core::game::fen_of(games.last().unwrap().position());
        assert_eq!(fen(again.games()), fen(&live));
        assert_eq!(last_move(again.games()), "O-O");
        assert_eq!(again.status().clock_connected, Some(true));
        assert_eq!(again.status().state, LinkState::Unknown);
        assert_eq!(again.summary(), (1, 9));
        assert!(again.game_in_progress());
        // Shown in a fresh hub without publishing anything.
        let fresh = Hub::new(crate::output::RoundInfo::default(), Default::default());
        again.restore_into(&fresh);
        assert_eq!(fresh.last_seq(), 0);
        fresh.with_round(|r| assert_eq!(r.board("board-4").unwrap().game().unwrap().ply(), 9));

        // An operator action: captured, then acted on.
        let events = again
            .operator(
                OperatorAction::SetResult {
                    result: "1/2-1/2".into(),
                },
                &hub,
            )
            .unwrap();
        assert!(
            events.iter().any(|e| matches!(
                e.kind,
                EventKind::GameEnded {
                    result: crate::core::vocab::DRAW,
                    ..
                }
            )),
            "{events:?}"
        );
        assert!(again.games().last().unwrap().result.is_some());
        assert!(!again.game_in_progress());

        // New players: a set_tags record.
        let meta = BoardMeta {
            white: Some("Other, B".into()),
            ..again.meta().clone()
        };
        again.set_meta(meta).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"action\":\"set_tags\"").count(), 1);
        assert_eq!(text.matches("\"action\":\"set_clock_side\"").count(), 1);
        assert_eq!(text.matches("\"action\":\"set_result\"").count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
