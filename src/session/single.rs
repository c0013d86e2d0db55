//! [`SingleBoard`]: the session of a port that serves one board (DGT boards on USB, serial or
//! Bluetooth, Millennium ChessLink), built from its driver's requests. Sans-IO.
//!
//! 1. **Handshake.** The driver's handshake bytes (DGT: reset to IDLE, version, serial number),
//!    its retry bytes every 2 s until the version and serial number are in (five tries for a
//!    configured port, two for a probed generic USB device, which then counts as no board of
//!    the family). A board that answers the version but never its serial number after three
//!    tries, or a family whose protocol has none, is named after its port.
//! 2. **Memory.** A board back after a long absence (or after a daemon restart) with a game in
//!    progress is asked for its own memory of what it sensed, when its family keeps one
//!    ([`BoardDriver::memory_request`]); streaming starts when the memory is in (the core
//!    recovers the moves made meanwhile from it, exactly), or when the line stays silent for
//!    [`MEMORY_SILENCE`] (a board that does not answer costs a moment, not the whole wait), or
//!    after [`MEMORY_WAIT`].
//! 3. **Streaming.** The driver's start bytes (DGT: update mode and a board dump, which the core
//!    compares with the game), then the [`Link`] state machine keeps the link right
//!    (keep-alive, dumps after bad frames and unexplained boards, a board that reset put back
//!    into update mode, the battery of a Bluetooth board), and the driver's
//!    [`ClockControl`] drives a clock on the board's cable (its probe first).

use std::time::{Duration, Instant};

use super::link::{Link, LinkConfig};
use super::{Action, Boards, ClockShow, Note, PortDead, SINGLE, Session, SessionConfig, Unit};
use crate::core::observation::Observation;
use crate::driver::{BoardDriver, ClockControl, Message, SessionMessage};

/// Time between handshake tries.
pub const HANDSHAKE_RETRY: Duration = Duration::from_secs(2);
/// Handshake tries after which a board that tells its version but no serial number is named
/// after its port.
const SERIAL_TRIES: u32 = 3;
/// How long the board's memory may take (a DGT board's 7.9 KB take about 8 s at 9600 baud).
pub const MEMORY_WAIT: Duration = Duration::from_secs(20);
/// How long the line may stay silent while the memory is awaited: a memory that is coming shows
/// its first bytes at once and then streams without a pause, so a board that does not answer
/// (or stops answering) costs this long, not [`MEMORY_WAIT`], before its game streams again.
pub const MEMORY_SILENCE: Duration = Duration::from_millis(1500);

#[derive(Debug)]
enum Phase {
    /// Asking who the board is.
    Hello {
        tries: u32,
        next_try: Instant,
        /// The board answered ([`SessionMessage::Version`] or [`SessionMessage::Answer`]).
        answered: bool,
        version: Option<(u8, u8)>,
        serial: Option<String>,
    },
    /// Known; waiting for its capture to open.
    Known,
    /// Its memory asked for, until it comes, the line stays silent until `quiet_until`, or the
    /// deadline `until`.
    Recalling {
        until: Instant,
        quiet_until: Instant,
    },
    /// Streaming.
    Streaming { link: Box<Link> },
}

/// The session of one board on a port.
#[derive(Debug)]
pub struct SingleBoard {
    driver: &'static dyn BoardDriver,
    cfg: SessionConfig,
    phase: Phase,
    clock: Option<Box<dyn ClockControl>>,
}

impl SingleBoard {
    /// A session for a board of `driver`'s family.
    pub fn new(driver: &'static dyn BoardDriver, cfg: SessionConfig) -> SingleBoard {
        SingleBoard {
            driver,
            cfg,
            phase: Phase::Known,
            clock: None,
        }
    }

    fn send(bytes: Vec<u8>, out: &mut Vec<Action>) {
        if !bytes.is_empty() {
            out.push(Action::Send {
                unit: Some(SINGLE),
                bytes,
            });
        }
    }

    fn note(note: Note, out: &mut Vec<Action>) {
        out.push(Action::Note { unit: SINGLE, note });
    }

    /// The handshake is complete when both answers are in (or the first, for a family that
    /// tells no serial number; a family with no version answers with
    /// [`SessionMessage::Answer`]).
    fn identified(&mut self, out: &mut Vec<Action>) {
        let Phase::Hello {
            answered,
            version,
            serial,
            ..
        } = &mut self.phase
        else {
            return;
        };
        if *answered && serial.is_none() && !self.driver.reports_serial() {
            *serial = Some(self.cfg.port_serial.clone());
        }
        if *answered && let Some(s) = serial.take() {
            out.push(Action::Found {
                unit: SINGLE,
                serial: s,
                version: *version,
            });
            self.phase = Phase::Known;
        }
    }

    /// Starts streaming: the driver's start bytes, the link, the clock's probe.
    fn stream(&mut self, now: Instant, out: &mut Vec<Action>) {
        Self::send(self.driver.start(), out);
        let cfg = LinkConfig::new(self.cfg.link, self.cfg.keepalive, self.cfg.quiet_dump);
        self.phase = Phase::Streaming {
            link: Box::new(Link::new(self.driver, cfg, now)),
        };
        self.clock = self.driver.clock();
        if let Some(bytes) = self.clock.as_mut().and_then(|c| c.poll(now)) {
            Self::send(bytes, out);
        }
    }
}

impl Session for SingleBoard {
    fn open(&mut self, now: Instant, out: &mut Vec<Action>) {
        Self::send(self.driver.handshake(), out);
        self.phase = Phase::Hello {
            tries: 1,
            next_try: now + HANDSHAKE_RETRY,
            answered: false,
            version: None,
            serial: None,
        };
    }

    fn listener(&self) -> Option<Unit> {
        Some(SINGLE)
    }

    fn received(
        &mut self,
        now: Instant,
        _from: Option<Unit>,
        msgs: &[Message],
        bad_frames: u64,
        _boards: &dyn Boards,
        out: &mut Vec<Action>,
    ) {
        match &mut self.phase {
            Phase::Hello {
                answered,
                version,
                serial,
                ..
            } => {
                for m in msgs {
                    match m {
                        Message::Session(SessionMessage::Version { major, minor }) => {
                            *answered = true;
                            *version = Some((*major, *minor))
                        }
                        Message::Session(SessionMessage::Answer) => *answered = true,
                        Message::Session(SessionMessage::Serial(s)) => *serial = Some(s.clone()),
                        _ => {}
                    }
                }
                self.identified(out);
            }
            Phase::Known => {}
            Phase::Recalling { quiet_until, .. } => {
                // Bytes are coming: the memory is on its way.
                *quiet_until = now + MEMORY_SILENCE;
                if msgs
                    .iter()
                    .any(|m| matches!(m, Message::Observation(Observation::Memory(_))))
                {
                    self.stream(now, out);
                }
            }
            Phase::Streaming { link } => {
                link.on_rx(now);
                if bad_frames > 0 {
                    link.on_bad_frame(now);
                }
                for m in msgs {
                    if let Some(c) = &mut self.clock
                        && c.received(m)
                    {
                        Self::note(Note::ClockBack, out);
                    }
                    if let Some(note) = link.on_message(now, m) {
                        Self::note(note, out);
                    }
                }
                // The next clock command goes out as soon as the last one's ack is in.
                if let Some(bytes) = self.clock.as_mut().and_then(|c| c.poll(now)) {
                    Self::send(bytes, out);
                }
            }
        }
    }

    fn opened(&mut self, now: Instant, unit: Unit, boards: &dyn Boards, out: &mut Vec<Action>) {
        let long = boards
            .away_for(unit)
            .is_none_or(|away| away >= self.cfg.memory_after);
        let memory = self
            .driver
            .memory_request()
            .filter(|_| long && boards.game_in_progress(unit));
        match memory {
            Some(bytes) => {
                Self::note(Note::MemoryAsked, out);
                Self::send(bytes, out);
                self.phase = Phase::Recalling {
                    until: now + MEMORY_WAIT,
                    quiet_until: now + MEMORY_SILENCE,
                };
            }
            None => self.stream(now, out),
        }
    }

    fn poll(&mut self, now: Instant, boards: &dyn Boards, out: &mut Vec<Action>) {
        match &mut self.phase {
            Phase::Hello {
                tries,
                next_try,
                answered,
                serial,
                ..
            } => {
                if now < *next_try {
                    return;
                }
                if *answered && serial.is_none() && *tries >= SERIAL_TRIES {
                    *serial = Some(self.cfg.port_serial.clone());
                    Self::note(Note::NoSerial, out);
                    self.identified(out);
                    return;
                }
                if *tries >= self.cfg.handshake_tries() {
                    out.push(if self.cfg.probing {
                        Action::NotABoard
                    } else {
                        Action::Dead(PortDead::NoHandshake)
                    });
                    return;
                }
                *tries += 1;
                *next_try = now + HANDSHAKE_RETRY;
                Self::send(self.driver.handshake_retry(), out);
            }
            Phase::Known => {}
            Phase::Recalling { until, quiet_until } => {
                if now >= *until || now >= *quiet_until {
                    Self::note(Note::MemoryLate, out);
                    self.stream(now, out);
                }
            }
            Phase::Streaming { link } => {
                let mut bytes = Vec::new();
                match link.poll(now, boards, &mut bytes) {
                    Ok(Some(note)) => Self::note(note, out),
                    Ok(None) => {}
                    Err(why) => {
                        out.push(Action::Dead(why));
                        return;
                    }
                }
                Self::send(bytes, out);
                if let Some(bytes) = self.clock.as_mut().and_then(|c| c.poll(now)) {
                    Self::send(bytes, out);
                }
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Hello { next_try, .. } => Some(*next_try),
            Phase::Recalling { until, quiet_until } => Some((*until).min(*quiet_until)),
            _ => None,
        }
    }

    fn shows_text(&self, _unit: Unit) -> bool {
        self.clock.as_ref().is_some_and(|c| c.shows_text())
    }

    fn show(&mut self, _unit: Unit, what: ClockShow) {
        if let Some(c) = &mut self.clock {
            c.show(what);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::FieldArray;
    use crate::driver::dgt::Dgt;
    use crate::driver::millennium::Millennium;
    use crate::session::link::LinkKind;

    struct View {
        memory: bool,
    }

    impl Boards for View {
        fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
            true
        }
        fn game_in_progress(&self, _unit: Unit) -> bool {
            self.memory
        }
        fn at_game_start(&self, _unit: Unit) -> bool {
            false
        }
        fn away_for(&self, _unit: Unit) -> Option<Duration> {
            None
        }
    }

    fn cfg(probing: bool) -> SessionConfig {
        SessionConfig {
            link: LinkKind::Wired,
            keepalive: Duration::from_secs(5),
            quiet_dump: Duration::from_secs(20),
            probing,
            port_serial: "port-ttyUSB0".into(),
            memory_after: Duration::from_secs(10),
        }
    }

    fn sent(out: &[Action]) -> Vec<u8> {
        out.iter()
            .flat_map(|a| match a {
                Action::Send { bytes, .. } => bytes.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    fn version(major: u8, minor: u8) -> Message {
        Message::Session(SessionMessage::Version { major, minor })
    }

    #[test]
    fn handshake_then_memory_then_streaming_with_the_clock_probe() {
        let t0 = Instant::now();
        let mut s = SingleBoard::new(&Dgt, cfg(false));
        let mut out = Vec::new();
        s.open(t0, &mut out);
        assert_eq!(sent(&out), [0x40, 0x4D, 0x45]);
        out.clear();
        let view = View { memory: true };
        s.received(t0, Some(0), &[version(3, 1)], 0, &view, &mut out);
        assert!(out.is_empty(), "the serial number is still missing");
        let serial = Message::Session(SessionMessage::Serial("10001".into()));
        s.received(t0, Some(0), &[serial], 0, &view, &mut out);
        assert_eq!(
            out,
            [Action::Found {
                unit: 0,
                serial: "10001".into(),
                version: Some((3, 1))
            }]
        );
        out.clear();
        s.opened(t0, 0, &view, &mut out);
        assert_eq!(sent(&out), [0x49], "memory first");
        out.clear();
        s.received(
            t0,
            Some(0),
            &[Message::Observation(Observation::Memory(Vec::new()))],
            0,
            &view,
            &mut out,
        );
        // Update mode and a dump, then the clock's VERSION probe.
        assert_eq!(sent(&out), [0x4B, 0x42, 0x2B, 0x03, 0x03, 0x09, 0x00]);
    }

    /// A DGT board identified and asked for its memory at `t0`.
    fn recalling(t0: Instant, view: &View) -> SingleBoard {
        let mut s = SingleBoard::new(&Dgt, cfg(false));
        let mut out = Vec::new();
        s.open(t0, &mut out);
        s.received(t0, Some(0), &[version(3, 1)], 0, view, &mut out);
        let serial = Message::Session(SessionMessage::Serial("10001".into()));
        s.received(t0, Some(0), &[serial], 0, view, &mut out);
        out.clear();
        s.opened(t0, 0, view, &mut out);
        assert_eq!(sent(&out), [0x49], "memory asked");
        s
    }

    fn late(out: &[Action]) -> bool {
        out.iter().any(|a| {
            matches!(
                a,
                Action::Note {
                    note: Note::MemoryLate,
                    ..
                }
            )
        })
    }

    #[test]
    fn a_memory_that_does_not_come_costs_a_moment_not_the_whole_wait() {
        let t0 = Instant::now();
        let view = View { memory: true };
        let mut s = recalling(t0, &view);
        assert_eq!(s.deadline(), Some(t0 + MEMORY_SILENCE));
        let mut out = Vec::new();
        s.poll(
            t0 + MEMORY_SILENCE - Duration::from_millis(1),
            &view,
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        s.poll(t0 + MEMORY_SILENCE, &view, &mut out);
        assert!(late(&out), "{out:?}");
        assert_eq!(
            sent(&out),
            [0x4B, 0x42, 0x2B, 0x03, 0x03, 0x09, 0x00],
            "streaming at once"
        );
    }

    #[test]
    fn a_memory_that_is_coming_is_waited_for_while_its_bytes_flow() {
        let t0 = Instant::now();
        let view = View { memory: true };
        let mut s = recalling(t0, &view);
        let mut out = Vec::new();
        // Bytes (no whole message yet) every second for 12 s: still waiting.
        for k in 1..=12 {
            let t = t0 + Duration::from_secs(k);
            s.received(t, Some(0), &[], 0, &view, &mut out);
            s.poll(t, &view, &mut out);
        }
        assert!(out.is_empty(), "{out:?}");
        let t = t0 + Duration::from_secs(12);
        let memory = Message::Observation(Observation::Memory(Vec::new()));
        s.received(t, Some(0), &[memory], 0, &view, &mut out);
        assert!(!late(&out));
        assert_eq!(sent(&out)[..2], [0x4B, 0x42], "update mode and a dump");
        // A transfer that stops half-way is given up after the silence too.
        let mut s = recalling(t0, &view);
        let mut out = Vec::new();
        s.received(
            t0 + Duration::from_secs(1),
            Some(0),
            &[],
            0,
            &view,
            &mut out,
        );
        s.poll(t0 + Duration::from_secs(2), &view, &mut out);
        assert!(out.is_empty());
        s.poll(
            t0 + Duration::from_secs(1) + MEMORY_SILENCE,
            &view,
            &mut out,
        );
        assert!(late(&out), "{out:?}");
    }

    #[test]
    fn a_silent_probed_device_is_not_a_board_and_a_configured_one_is_a_dead_link() {
        let t0 = Instant::now();
        for (probing, tries) in [(true, 2), (false, 5)] {
            let mut s = SingleBoard::new(&Dgt, cfg(probing));
            let mut out = Vec::new();
            s.open(t0, &mut out);
            let view = View { memory: false };
            let mut t = t0;
            for _ in 0..tries {
                t += HANDSHAKE_RETRY;
                s.poll(t, &view, &mut out);
            }
            assert_eq!(
                sent(&out).len(),
                3 + 2 * (tries as usize - 1),
                "handshake and its retries"
            );
            let end = if probing {
                Action::NotABoard
            } else {
                Action::Dead(PortDead::NoHandshake)
            };
            assert_eq!(out.last(), Some(&end));
        }
    }

    #[test]
    fn a_family_without_serial_numbers_is_named_after_its_port_and_sends_no_clock_bytes() {
        let t0 = Instant::now();
        let mut s = SingleBoard::new(&Millennium, cfg(false));
        let mut out = Vec::new();
        s.open(t0, &mut out);
        out.clear();
        let view = View { memory: true };
        s.received(t0, Some(0), &[version(1, 4)], 0, &view, &mut out);
        assert_eq!(
            out,
            [Action::Found {
                unit: 0,
                serial: "port-ttyUSB0".into(),
                version: Some((1, 4))
            }]
        );
        out.clear();
        s.opened(t0, 0, &view, &mut out);
        let bytes: Vec<u8> = sent(&out).iter().map(|b| b & 0x7F).collect();
        assert_eq!(
            bytes, b"W020356R0250S53",
            "no memory, no clock: the start bytes"
        );
        s.show(0, ClockShow::Text("e4".into()));
        out.clear();
        s.poll(t0 + Duration::from_secs(1), &view, &mut out);
        assert!(sent(&out).is_empty(), "{out:?}");
    }
}
