//! An emulated DGT board with a DGT 3000 clock on its cable, as a daemon sees it on a serial
//! port: it answers the host's commands (`docs/dgt-protocol.md` §1.2: mode, version, serial number,
//! board dump, clock times, clock messages with acks) and plays a script of games made by the
//! [simulator](super) with human handling.
//!
//! [`Emulator`] is sans-IO: host bytes in, board bytes out, script time as an input. The
//! [`runner`](super::runner) paces it on a pseudo-terminal at real or accelerated speed, and can unplug and
//! replug it, hold the players while the host is away, and inject line noise.
//!
//! The board behaves like the real one: after power-up (and after every replug) it sits in IDLE
//! and sends nothing until a mode command (0x43, 0x44, 0x4B) arrives; in IDLE and while
//! unplugged the players go on and only the board's state changes, which the next dump shows.
//!
//! The clock behaves like a real DGT 3000 on the board's cable (the recording in
//! `tests/data/arnsholt-dgtdriver/`, `docs/dgt-protocol.md` §2.1): the status byte keeps the
//! turn bits while paused (`0x08` left's turn, `0x12` right's turn) and adds the running bit
//! while it runs (`0x09`, `0x13`); the hours bytes carry D5 (time per move) in increment mode;
//! in UPDATE and UPDATE_NICE a clock message goes out every time the running face's display
//! changes, about once a second, not only at presses. A clock command is acknowledged 1–2 s
//! after it arrives (link time, which the runner keeps at real pace whatever the players'
//! speed), and the clock takes one command at a time: a command that arrives before the
//! previous one's ack is lost.
//!
//! Links that misbehave: the board can reset with its port open ([`Emulator::reset`]: back to
//! IDLE, still answering requests), field updates can be lost on the line
//! ([`EmulatorConfig::lose_field_updates`]), an old board sends its serial number as a 12-byte
//! frame, and a Bluetooth board answers the battery request (0x4C).
//!
//! The board keeps its own memory ([`super::dgt_memory::DgtMemory`]): every change it senses, in every
//! mode and while unplugged (the players go on), and the clock's times at every lever change;
//! `0x49` (SEND_EE_MOVES) sends it.
//!
//! The board is strict, so that tests see what a host sends that the board does not take
//! ([`Emulator::unknown_bytes`]): every byte that is no single-board command the board knows
//! (DGT's header `dgtbrd.h`, commands 0x40–0x55 and the clock wrapper 0x2B), and every byte of
//! a clock message that is not one of the header's (`2B <size> 03 <cmd> <data> 00` with the
//! header's size for `cmd`), is counted. Counted too: 0x4C (battery) on a board without
//! Bluetooth, ASCII text (0x0C) for a DGT XL (it has no text display), and the commands the
//! emulator does not model (0x4A TO_BUSMODE, 0x4E bootloader, 0x50–0x54 draughts scans, 0x60
//! Revelation II LEDs, and bus commands 0x80–0x8D: per the header a bus command would switch
//! the board to bus mode; the emulator stays in single-board mode and counts it).

use super::*;

/// The board's reporting mode (§1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sends only answers to requests.
    Idle,
    /// 0x43: field updates and clock times.
    Update,
    /// 0x44: field updates only; clock messages get no ack.
    UpdateBoard,
    /// 0x4B: field updates and clock times when they change.
    UpdateNice,
}

/// Host→board command parser state: inside a `0x2B <n> …` clock message or not.
#[derive(Debug, Default)]
struct HostParser {
    /// Bytes of the clock message so far (after 0x2B: the size, then the message), when inside
    /// one.
    clock_msg: Option<Vec<u8>>,
}

/// The size byte of each clock command the DGT header defines (`dgtbrd.h`, "Clock commands":
/// DISPLAY, ICONS, END, BUTTON, VERSION, SETNRUN, BEEP, ASCII).
fn clock_command_size(cmd: u8) -> Option<u8> {
    match cmd {
        0x01 | 0x02 => Some(0x0B),
        0x03 | 0x08 | 0x09 => Some(0x03),
        0x0A => Some(0x0A),
        0x0B => Some(0x04),
        0x0C => Some(0x0C),
        _ => None,
    }
}

/// How many bytes not taken a strict emulator keeps for reports.
pub const UNKNOWN_SAMPLE: usize = 64;

/// Bytes an emulator did not take: how many, and the first [`UNKNOWN_SAMPLE`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unknown {
    /// Bytes not taken.
    pub count: u64,
    /// The first of them, in order.
    pub sample: Vec<u8>,
}

impl Unknown {
    /// Counts `bytes` as not taken.
    pub fn add(&mut self, bytes: &[u8]) {
        self.count += bytes.len() as u64;
        let room = UNKNOWN_SAMPLE.saturating_sub(self.sample.len());
        self.sample.extend(bytes.iter().take(room));
    }
}

/// A clock command the clock is working on.
#[derive(Debug, Clone, Copy)]
struct Busy {
    /// Link time of the ack.
    until: Micros,
    /// The ack to send then.
    ack: ClockAck,
}

/// What happened to the clock commands the board relayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockCommandStats {
    /// Commands the clock took.
    pub accepted: u64,
    /// Commands lost: they came while the clock was still busy with the previous one.
    pub lost: u64,
    /// Acks sent.
    pub acked: u64,
}

/// The emulated board and clock.
#[derive(Debug)]
pub struct Emulator {
    cfg: EmulatorConfig,
    script: Script,
    next: usize,
    fields: FieldArray,
    clock: Option<ClockReading>,
    /// Script time at which `clock` was read (the running face goes down from there).
    clock_at: Micros,
    /// Script time of the running face's next display change.
    next_tick: Option<Micros>,
    mode: Mode,
    parser: HostParser,
    noise: Rng,
    next_noise: Micros,
    /// Link (real) time, for the clock's acks.
    link_now: Micros,
    busy: Option<Busy>,
    acks: Rng,
    field_updates: u64,
    /// The board's memory.
    memory: DgtMemory,
    /// Script time of the last [`Emulator::advance`].
    now: Micros,
    /// Host bytes not taken.
    unknown: Unknown,
    /// Texts shown on the DGT 3000, in order.
    pub texts: Vec<String>,
    /// Host commands received, by command byte (clock messages counted under 0x2B).
    pub commands: std::collections::BTreeMap<u8, u64>,
    /// Clock commands taken, lost and acknowledged.
    pub clock_commands: ClockCommandStats,
    /// Field updates lost on the line.
    pub field_updates_lost: u64,
    /// Times the board reset itself.
    pub resets: u64,
    /// The board has power: its memory records (see [`Emulator::set_powered`]).
    powered: bool,
}

impl Emulator {
    /// A board holding the script's first position, in IDLE, clock not started.
    pub fn new(script: Script, cfg: EmulatorConfig) -> Emulator {
        let clock = script.steps.iter().find_map(|(_, m)| match m {
            DgtMessage::ClockTimes(r) => Some(ClockReading {
                running: false,
                ..*r
            }),
            _ => None,
        });
        let clock = if cfg.clock == ClockModel::None {
            None
        } else {
            Some(clock.unwrap_or_default())
        };
        let seed = cfg.serial.bytes().map(u64::from).sum::<u64>();
        let noise = Rng::new(seed ^ 0x5EED);
        let memory = DgtMemory::powered_up(seed, 0, &script.initial);
        Emulator {
            memory,
            now: 0,
            unknown: Unknown::default(),
            next_noise: cfg.noise_every.unwrap_or(Micros::MAX),
            fields: script.initial,
            script,
            next: 0,
            clock,
            clock_at: 0,
            next_tick: None,
            mode: Mode::Idle,
            parser: HostParser::default(),
            noise,
            link_now: 0,
            busy: None,
            acks: Rng::new(seed ^ 0xAC4),
            field_updates: 0,
            texts: Vec::new(),
            commands: Default::default(),
            clock_commands: ClockCommandStats::default(),
            field_updates_lost: 0,
            resets: 0,
            powered: true,
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EmulatorConfig {
        &self.cfg
    }

    /// The script being played.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// What the board's sensors read now.
    pub fn fields(&self) -> &FieldArray {
        &self.fields
    }

    /// The current reporting mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The board's memory.
    pub fn memory(&self) -> &DgtMemory {
        &self.memory
    }

    /// The board's memory, to write to (the bus emulator's SET_START_GAME, SEND_CHANGES).
    pub fn memory_mut(&mut self) -> &mut DgtMemory {
        &mut self.memory
    }

    /// Script time of the last [`Emulator::advance`].
    pub fn now(&self) -> Micros {
        self.now
    }

    /// Host bytes the board did not take (see the module documentation).
    pub fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    /// The first host bytes the board did not take.
    pub fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }

    /// The clock's BWTIME payload as the board sends it at script time [`Emulator::now`]
    /// (7 bytes: the running face as it shows then, the real status bytes, hours D5 in
    /// increment mode; "no clock" without one).
    pub fn clock_payload(&self) -> Vec<u8> {
        let frame = match self.clock {
            Some(r) => self.encode_clock(&run_down(r, self.now - self.clock_at)),
            None => DgtMessage::NoClock.encode(),
        };
        frame.get(3..).map(<[u8]>::to_vec).unwrap_or_default()
    }

    /// Script time of the next step or clock display change, if any.
    pub fn next_due(&self) -> Option<Micros> {
        let step = self.script.step(self.next).map(|(t, _)| t);
        match (step, self.next_tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the clock shows now (`None` without a clock).
    pub fn clock(&self) -> Option<ClockReading> {
        self.clock
    }

    /// Link time of the next clock ack, if one is due.
    pub fn next_link_due(&self) -> Option<Micros> {
        self.busy.map(|b| b.until)
    }

    /// Moves link (real) time on to `now`: a clock ack due by then goes to `out` when the board
    /// is in UPDATE or UPDATE_NICE (in other modes the board does not pass it on).
    pub fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.link_now = self.link_now.max(now);
        if let Some(b) = self.busy
            && b.until <= self.link_now
        {
            self.busy = None;
            if matches!(self.mode, Mode::Update | Mode::UpdateNice) {
                self.clock_commands.acked += 1;
                out.extend(DgtMessage::ClockAck(b.ack).encode());
            }
        }
    }

    /// Power off (`false`: the players go on, the board senses and records nothing) or on
    /// (`true`: the memory's power-up sequence with the pieces found, at [`Emulator::now`]).
    /// Used by the bus emulator for a board switched off on its chain.
    pub fn set_powered(&mut self, on: bool) {
        if on && !self.powered {
            self.memory.power_up(self.now, &self.fields);
        }
        self.powered = on;
    }

    /// The board resets (a power glitch, a firmware watchdog) while its port stays open: it
    /// comes back in IDLE (answers requests, sends no updates); the clock forgets the command
    /// it was working on.
    pub fn reset(&mut self) {
        self.mode = Mode::Idle;
        self.parser = HostParser::default();
        self.busy = None;
        self.resets += 1;
        // With its port open the board kept power: its watchdog reset it (`dgtbrd.h`:
        // EE_WATCHDOG_ACTION, then the power-up sequence).
        self.memory.watchdog(self.now, &self.fields);
    }

    /// The clock message as the board sends it (hours D5 in increment mode).
    fn encode_clock(&self, r: &ClockReading) -> Vec<u8> {
        let mut bytes = DgtMessage::ClockTimes(*r).encode();
        if self.cfg.increment_mode && bytes.len() == 10 {
            bytes[3] |= 0x20;
            bytes[6] |= 0x20;
        }
        bytes
    }

    /// The clock's state becomes `r` at script time `t`.
    fn set_clock(&mut self, t: Micros, r: ClockReading) {
        self.clock = Some(r);
        self.clock_at = t;
        self.next_tick = (self.cfg.clock_ticks && r.running && (r.left_turn || r.right_turn))
            .then_some(t + 1_000_000);
    }

    /// Whether every step has been played (never, for a [looped](Script::looped) script).
    pub fn finished(&self) -> bool {
        self.script.step(self.next).is_none()
    }

    /// Plies whose first hand action is at or before `t`.
    pub fn plies_started(&self, t: Micros) -> usize {
        self.script
            .plies
            .iter()
            .take_while(|p| p.first_action <= t)
            .count()
    }

    /// Plies settled (clock pressed, or the game-ending move made) at or before `t`.
    pub fn plies_settled(&self, t: Micros) -> usize {
        self.script
            .plies
            .iter()
            .take_while(|p| p.settled <= t)
            .count()
    }

    /// A time at which `k` more plies (after those settled by `t`, the one in progress
    /// included) are settled and the next has not started: where to stop fast-forwarding.
    pub fn after_plies(&self, t: Micros, k: usize) -> Micros {
        if k == 0 {
            return t;
        }
        let settled = self.plies_settled(t);
        let Some(last) = self.script.plies.get(settled + k - 1) else {
            return self.script.end();
        };
        let next_start = self
            .script
            .plies
            .get(settled + k)
            .map_or(Micros::MAX, |p| p.first_action);
        // Let the move's last field updates (possibly reported after the press) go out.
        (last.settled + 600_000)
            .min(next_start - 1)
            .max(last.settled)
    }

    /// Plays every step due at or before `now`: the board's state changes, and in an update
    /// mode the messages go to `out`.
    pub fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.now = self.now.max(now);
        loop {
            let step = self.script.step(self.next).map(|(t, _)| t);
            if let Some(tick) = self.next_tick
                && tick <= now
                && step.is_none_or(|s| tick < s)
            {
                self.tick(tick, out);
                continue;
            }
            let Some((t, msg)) = self.script.step(self.next) else {
                break;
            };
            if t > now {
                break;
            }
            let msg = msg.clone();
            self.next += 1;
            let bytes = match &msg {
                DgtMessage::FieldUpdate { index, reading } => {
                    self.fields[usize::from(*index)] = *reading;
                    if self.powered {
                        self.memory.field_changed(t, *index, *reading, &self.fields);
                    }
                    if self.mode == Mode::Idle {
                        None
                    } else {
                        let n = self.field_updates;
                        self.field_updates += 1;
                        if self.cfg.lose_field_updates.contains(&n) {
                            self.field_updates_lost += 1;
                            None
                        } else {
                            Some(msg.encode())
                        }
                    }
                }
                DgtMessage::ClockTimes(r) => match self.clock {
                    Some(_) => {
                        self.set_clock(t, *r);
                        if self.powered {
                            self.memory.clock(r);
                        }
                        matches!(self.mode, Mode::Update | Mode::UpdateNice)
                            .then(|| self.encode_clock(r))
                    }
                    None => None,
                },
                _ => (self.mode != Mode::Idle).then(|| msg.encode()),
            };
            if let Some(bytes) = bytes {
                if t >= self.next_noise {
                    self.noise_burst(out);
                    self.next_noise = t + self.cfg.noise_every.unwrap_or(Micros::MAX / 2);
                }
                out.extend(bytes);
            }
        }
    }

    /// The running face's display changes at `t`.
    fn tick(&mut self, t: Micros, out: &mut Vec<u8>) {
        let Some(c) = self.clock else {
            self.next_tick = None;
            return;
        };
        let r = run_down(c, t - self.clock_at);
        self.clock = Some(r);
        self.clock_at = t;
        let stopped = r.left.flag && r.left_turn || r.right.flag && r.right_turn;
        self.next_tick = (!stopped).then_some(t + 1_000_000);
        if r != c && matches!(self.mode, Mode::Update | Mode::UpdateNice) {
            out.extend(self.encode_clock(&r));
        }
    }

    /// Line noise: bytes without bit 7 (dropped by a decoder looking for a header), unknown
    /// message ids and frames cut short; never a valid frame.
    fn noise_burst(&mut self, out: &mut Vec<u8>) {
        let n = 1 + self.noise.below(12) as usize;
        for _ in 0..n {
            match self.noise.below(4) {
                0 => out.push(0x80 | [0x00, 0x01, 0x7F, 0x40, 0x3F][self.noise.below(5) as usize]),
                1 => out.extend([0x8E, 0x00]),
                2 => out.extend([0x86, 0x00, 0x43, 0x08, 0x09]),
                _ => out.push(self.noise.below(0x80) as u8),
            }
        }
    }

    /// The board was unplugged (or powered off and on): back to IDLE, partial commands lost.
    pub fn unplugged(&mut self) {
        self.mode = Mode::Idle;
        self.parser = HostParser::default();
        self.busy = None;
    }

    /// Bytes from the host; answers go to `out`. Returns whether a mode command was among them
    /// (the players wait for the board to be "on" before they start).
    pub fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        let mut mode_set = false;
        for &b in bytes {
            if let Some(msg) = &mut self.parser.clock_msg {
                msg.push(b);
                // `msg` = [size, size bytes…]; a size of 0 is complete (and malformed) at once.
                if msg.len() > usize::from(msg[0]) {
                    let msg = self.parser.clock_msg.take().unwrap_or_default();
                    self.clock_message(&msg, out);
                }
                continue;
            }
            *self.commands.entry(b).or_default() += 1;
            match b {
                0x2B => self.parser.clock_msg = Some(Vec::new()),
                0x40 => self.mode = Mode::Idle,
                0x41 => out.extend(match self.clock {
                    Some(r) => self.encode_clock(&r),
                    None => DgtMessage::NoClock.encode(),
                }),
                0x42 => out.extend(DgtMessage::BoardDump(Box::new(self.fields)).encode()),
                0x43 | 0x44 | 0x4B => {
                    self.mode = match b {
                        0x43 => Mode::Update,
                        0x44 => Mode::UpdateBoard,
                        _ => Mode::UpdateNice,
                    };
                    mode_set = true;
                }
                0x45 if self.cfg.old_serial => {
                    // 12 bytes: header, the digits, NUL padding to 9 payload bytes.
                    let mut payload: Vec<u8> = self.cfg.serial.bytes().take(9).collect();
                    payload.resize(9, 0);
                    out.extend([0x91, 0x00, 0x0C]);
                    out.extend(payload);
                }
                0x45 => out.extend(DgtMessage::SerialNumber(self.cfg.serial.clone()).encode()),
                0x4C => match self.cfg.battery {
                    Some(pct) => {
                        let raw = vec![pct.min(100), 0x7F, 0x7F, 1, 0, 0, 0, 0, 0x02];
                        out.extend(DgtMessage::Battery(BatteryStatus::from_raw(raw)).encode());
                    }
                    // A wired board has no battery command.
                    None => self.unknown.add(&[b]),
                },
                0x49 => {
                    out.extend(self.memory.dump_frame());
                    self.memory.downloaded();
                }
                0x46 => {
                    let n: u16 = self.cfg.serial.parse().unwrap_or(0);
                    out.extend(DgtMessage::BusAddress(n & 0x3FFF).encode());
                }
                0x47 => out.extend(
                    DgtMessage::Trademark(format!(
                        "Digital Game Technology (eboardd emulator) Serial nr. {}",
                        self.cfg.serial
                    ))
                    .encode(),
                ),
                0x4D => out.extend(
                    DgtMessage::Version {
                        major: self.cfg.version.0,
                        minor: self.cfg.version.1,
                    }
                    .encode(),
                ),
                0x55 => out.extend(
                    DgtMessage::LongSerialNumber(format!("{:0>10}", self.cfg.serial)).encode(),
                ),
                // Not a single-board command this board takes (see the module documentation).
                _ => self.unknown.add(&[b]),
            }
        }
        mode_set
    }

    /// A complete `0x2B` message: `msg` = `[n, 0x03, cmd, data…, 0x00]`. One that is not a
    /// clock command of the header (size, start and end bytes) is not taken, nor is text for
    /// a clock that cannot show it. The clock takes the rest unless it is still busy with the
    /// previous one (then it is lost); its ack goes out 1–2 s later ([`Emulator::link_time`]).
    fn clock_message(&mut self, msg: &[u8], _out: &mut Vec<u8>) {
        let well_formed = msg.len() >= 4
            && msg[1] == 0x03
            && msg.last() == Some(&0x00)
            && clock_command_size(msg[2]) == Some(msg[0]);
        let text_on_xl = msg.get(2) == Some(&0x0C) && self.cfg.clock == ClockModel::Xl;
        if !well_formed || text_on_xl {
            self.unknown.add(&[0x2B]);
            self.unknown.add(msg);
            return;
        }
        let cmd = msg[2];
        if self.clock.is_none() {
            // Passed on to the cable, where no clock listens.
            return;
        }
        if self.busy.is_some() {
            self.clock_commands.lost += 1;
            return;
        }
        self.clock_commands.accepted += 1;
        let data = &msg[3..msg.len().saturating_sub(1).max(3)];
        if cmd == 0x0C && self.cfg.clock == ClockModel::Dgt3000 {
            let text: String = data
                .iter()
                .take(8)
                .map(|&b| char::from(b))
                .collect::<String>()
                .trim_end()
                .to_string();
            self.texts.push(text);
        }
        let ack2 = match (cmd, self.cfg.clock) {
            (0x09, ClockModel::Dgt3000) => 0x21,
            (0x09, _) => 0x14,
            _ => 0,
        };
        let ack = ClockAck {
            ack0: 0x10,
            ack1: cmd,
            ack2,
            ack3: 0,
        };
        let (lo, hi) = self.cfg.ack_delay;
        let delay = if hi > lo { self.acks.range(lo, hi) } else { lo };
        self.busy = Some(Busy {
            until: self.link_now + delay.max(0),
            ack,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::pgn::parse_games;

    fn script() -> Script {
        let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n1. d4 d5 2. c4 *\n";
        let games: Vec<ScriptGame> = parse_games(pgn).into_iter().map(|g| g.unwrap()).collect();
        Script::from_games(&games, &SimConfig::human(7), 5_000_000)
    }

    fn decode(bytes: &[u8]) -> Vec<DgtMessage> {
        let mut out = Vec::new();
        DgtDecoder::new().decode(bytes, &mut out);
        out
    }

    #[test]
    fn handshake_answers() {
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        assert!(!em.host_input(&[0x40, 0x4D, 0x45], &mut out));
        assert_eq!(
            decode(&out),
            [
                DgtMessage::Version { major: 3, minor: 1 },
                DgtMessage::SerialNumber("10001".into())
            ]
        );
        out.clear();
        assert!(em.host_input(&[0x4B, 0x42, 0x2B, 0x03, 0x03, 0x09, 0x00], &mut out));
        let msgs = decode(&out);
        assert_eq!(msgs.len(), 1, "the clock's ack is not there yet");
        assert!(matches!(msgs[0], DgtMessage::BoardDump(_)));
        out.clear();
        em.link_time(999_999, &mut out);
        assert!(out.is_empty(), "no ack within the first second");
        em.link_time(2_000_000, &mut out);
        assert_eq!(
            decode(&out),
            [DgtMessage::ClockAck(ClockAck {
                ack0: 0x10,
                ack1: 0x09,
                ack2: 0x21,
                ack3: 0
            })]
        );
        out.clear();
        em.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        assert_eq!(em.texts, ["Nf3"]);
        em.link_time(4_000_000, &mut out);
        assert_eq!(decode(&out).len(), 1);
    }

    #[test]
    fn one_clock_command_at_a_time_the_next_before_the_ack_is_lost() {
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        em.host_input(&[0x4B], &mut out);
        em.link_time(10_000_000, &mut out);
        em.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        em.link_time(10_500_000, &mut out);
        // Sent before the first one's ack: lost.
        em.host_input(b"\x2b\x0c\x03\x0cNc6     \x00\x00", &mut out);
        let due = em.next_link_due().unwrap();
        assert!((11_000_000..=12_000_000).contains(&due), "{due}");
        em.link_time(due, &mut out);
        assert_eq!(decode(&out).len(), 1);
        em.host_input(b"\x2b\x0c\x03\x0cBb5     \x00\x00", &mut out);
        em.link_time(due + 2_000_000, &mut out);
        assert_eq!(em.texts, ["Nf3", "Bb5"]);
        assert_eq!(
            em.clock_commands,
            ClockCommandStats {
                accepted: 2,
                lost: 1,
                acked: 2
            }
        );
    }

    #[test]
    fn clock_runs_down_once_a_second_with_the_real_status_bytes() {
        let s = script();
        let end = s.end();
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.host_input(&[0x41], &mut out);
        // Not started yet: paused, White's (left or right) turn kept.
        assert!([0x08, 0x12].contains(&out[9]), "{:02x}", out[9]);
        assert_eq!(out[3] & 0x20, 0x20, "time per move (D5)");
        out.clear();
        em.host_input(&[0x4B], &mut out);
        em.advance(end, &mut out);
        let mut statuses = std::collections::BTreeSet::new();
        let mut prev: Option<(u8, u32)> = None;
        let mut one_second = 0;
        let mut i = 0;
        while i + 3 <= out.len() {
            let len = usize::from(out[i + 1]) << 7 | usize::from(out[i + 2]);
            let f = &out[i..i + len];
            if f[0] == 0x8D {
                statuses.insert(f[9]);
                let DgtMessage::ClockTimes(r) = &decode(f)[0] else {
                    panic!()
                };
                let face = if r.left_turn { r.left } else { r.right };
                if let Some((st, before)) = prev
                    && st == f[9]
                    && st & 1 == 1
                {
                    assert_eq!(before - face.millis, 1000);
                    one_second += 1;
                }
                prev = Some((f[9], face.millis));
            }
            i += len;
        }
        assert!(
            statuses.is_subset(&[0x08, 0x09, 0x12, 0x13].into()),
            "{statuses:x?}"
        );
        assert!(statuses.contains(&0x09) && statuses.contains(&0x13));
        assert!(one_second > 20, "{one_second}");
    }

    #[test]
    fn reset_board_answers_but_sends_nothing_and_lost_updates_are_lost() {
        let s = script();
        let end = s.end();
        let cfg = EmulatorConfig {
            lose_field_updates: vec![0],
            clock_ticks: false,
            ..Default::default()
        };
        let mut em = Emulator::new(s.clone(), cfg);
        let mut out = Vec::new();
        em.host_input(&[0x4B], &mut out);
        let first_move = s.plies[0].settled + 1;
        em.advance(first_move, &mut out);
        assert_eq!(em.field_updates_lost, 1);
        em.reset();
        out.clear();
        em.advance(end, &mut out);
        assert!(out.is_empty(), "IDLE after the reset");
        em.host_input(&[0x45], &mut out);
        assert_eq!(decode(&out), [DgtMessage::SerialNumber("10001".into())]);
    }

    #[test]
    fn idle_board_changes_silently_and_the_dump_shows_it() {
        let s = script();
        let end = s.end();
        let plies = s.plies.len();
        assert_eq!(plies, 9);
        assert_eq!(s.game_starts.len(), 2);
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.advance(end, &mut out);
        assert!(out.is_empty(), "IDLE: nothing sent");
        assert!(em.finished());
        em.host_input(&[0x42], &mut out);
        let DgtMessage::BoardDump(f) = &decode(&out)[0] else {
            panic!()
        };
        // After 1. d4 d5 2. c4 of the second game.
        let pos = "1. d4 d5 2. c4";
        let g = parse_games(pos).remove(0).unwrap();
        let mut p = g.start.clone();
        for m in &g.moves {
            p.play_unchecked(*m);
        }
        let mut want = [SquareReading::Empty; 64];
        for (sq, piece) in p.board() {
            want[usize::from(crate::sim::field_index(sq, false))] = SquareReading::Piece(piece);
        }
        assert_eq!(**f, want);
    }

    #[test]
    fn update_mode_streams_the_script_with_noise_that_decodes_to_nothing_extra() {
        let s = script();
        let n_steps = s.steps.len();
        let end = s.end();
        let cfg = EmulatorConfig {
            noise_every: Some(1_000_000),
            clock_ticks: false,
            ..Default::default()
        };
        let mut em = Emulator::new(s, cfg);
        let mut out = Vec::new();
        em.host_input(&[0x43], &mut out);
        em.advance(end, &mut out);
        let msgs = decode(&out);
        assert_eq!(msgs.len(), n_steps);
        assert!(out.len() > n_steps * 5);
    }

    #[test]
    fn strict_every_byte_not_taken_is_counted() {
        use crate::driver::dgt::{ClockCommand, DgtCommand};
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        // What the daemon sends: all taken.
        let mut host = vec![0x40, 0x4D, 0x45, 0x4B, 0x42, 0x45];
        for c in [
            ClockCommand::Version,
            ClockCommand::Ascii {
                text: "Nf3".into(),
                beep: 0,
            },
            ClockCommand::EndText,
        ] {
            host.extend(DgtCommand::Clock(c).encode());
        }
        em.host_input(&host, &mut out);
        assert_eq!(em.unknown_bytes(), 0, "{:02x?}", em.unknown_sample());
        // Bus mode, LEDs, a bus PING frame, battery on a wired board: 1 + 1 + 4 + 1.
        em.host_input(&[0x4A, 0x60, 0x87, 0x00, 0x00, 0x07, 0x4C], &mut out);
        assert_eq!(em.unknown_bytes(), 7);
        // Clock messages that are not the header's: a wrong size, no end byte, an unknown
        // command; all their bytes.
        em.host_input(&[0x2B, 0x04, 0x03, 0x09, 0x00, 0x00], &mut out);
        em.host_input(&[0x2B, 0x03, 0x03, 0x03, 0x01], &mut out);
        em.host_input(&[0x2B, 0x03, 0x03, 0x77, 0x00], &mut out);
        assert_eq!(em.unknown_bytes(), 7 + 6 + 5 + 5);
        assert_eq!(
            &em.unknown_sample()[..7],
            &[0x4A, 0x60, 0x87, 0x00, 0x00, 0x07, 0x4C]
        );
        // Still in step: the next command is answered.
        out.clear();
        em.host_input(&[0x45], &mut out);
        assert_eq!(decode(&out), [DgtMessage::SerialNumber("10001".into())]);
        // Text for a DGT XL, which cannot show it.
        let mut xl = Emulator::new(
            script(),
            EmulatorConfig {
                clock: ClockModel::Xl,
                ..Default::default()
            },
        );
        xl.host_input(&[0x2B, 0x03, 0x03, 0x09, 0x00], &mut out);
        assert_eq!(xl.unknown_bytes(), 0);
        xl.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        assert_eq!(xl.unknown_bytes(), 14);
    }

    #[test]
    fn the_memory_records_in_idle_and_0x49_sends_it() {
        let s = script();
        let first = s.plies[0].settled + 1;
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.advance(first, &mut out);
        assert!(out.is_empty(), "IDLE");
        em.host_input(&[0x49], &mut out);
        assert_eq!(em.unknown_bytes(), 0);
        assert_eq!(out.len(), 0x1F03);
        assert_eq!(&out[..3], &[0x8F, 0x3E, 0x03]);
        assert_eq!(*out.last().unwrap(), dgt_memory::tag::EOF);
        // The decoder takes it as the EE_MOVES frame it is.
        let msgs = decode(&out);
        let [DgtMessage::EeMoves { entries }] = &msgs[..] else {
            panic!("{msgs:?}")
        };
        assert!(
            entries.contains(&crate::driver::dgt::EeEntry::Tag(
                crate::driver::dgt::EeTag::BeginPos
            )),
            "{entries:?}"
        );
        let data = &out[3..out.len() - 1];
        let begin = data
            .iter()
            .position(|&b| b == dgt_memory::tag::BEGINPOS)
            .expect("the start position tagged at power-up");
        // Entries by their first byte (`dgtbrd.h`): field 40–5F (2 bytes), time 60–69 and
        // 70–79 (3 bytes), the rest one byte.
        let mut entries = Vec::new();
        let mut i = begin + 1;
        while i < data.len() {
            let n = match data[i] {
                0x40..=0x5F => 2,
                0x60..=0x69 | 0x70..=0x79 => 3,
                _ => 1,
            };
            entries.push(&data[i..(i + n).min(data.len())]);
            i += n;
        }
        // 1. e4 moved the pawn: e2 (field 52) emptied, a white pawn on e4 (36), then White's
        // press: a time entry of the face that stopped.
        let fields: Vec<(u8, u8)> = entries
            .iter()
            .filter(|e| e.len() == 2)
            .map(|e| (e[0] & 0x4F, e[1]))
            .collect();
        assert!(fields.contains(&(0x40, 52)), "{entries:02x?}");
        assert_eq!(fields.last(), Some(&(0x41, 36)), "{entries:02x?}");
        assert_eq!(entries.iter().filter(|e| e.len() == 3).count(), 1);
        assert_eq!(entries.last().map(|e| e.len()), Some(3), "{entries:02x?}");
        out.clear();
        em.host_input(&[0x49], &mut out);
        assert_eq!(out[out.len() - 2], dgt_memory::tag::DOWNLOADED);
    }

    #[test]
    fn after_plies_stops_between_moves() {
        let s = script();
        let em = Emulator::new(s.clone(), EmulatorConfig::default());
        let t = em.after_plies(0, 2);
        assert_eq!(em.plies_started(t), 2);
        assert_eq!(em.plies_settled(t), 2);
        assert!(t >= s.plies[1].settled);
        assert!(t < s.plies[2].first_action);
        // From the middle of ply 3: ply 3 is finished, and that is the one more ply.
        let mid = s.plies[2].first_action + 1;
        let t = em.after_plies(mid, 1);
        assert_eq!(em.plies_settled(t), 3);
        assert_eq!(em.plies_started(t), 3);
    }
}
