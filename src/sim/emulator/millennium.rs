//! An emulated Millennium ChessLink board (ChessGenius Exclusive with ChessLink, eONE), as a
//! daemon sees it on a serial port: it answers the ChessLink commands (`V`, `S`, `W`, `R`, `L`,
//! `X`; `T` resets it) and, once the host has set automatic reports (E2ROM address 02) to a
//! status on change, sends the whole board (`s` + 64 letters) every time its sensors change.
//!
//! The players are the DGT [`Emulator`]'s (with no clock: the ChessLink has none), so the same
//! script of games with human handling plays on both families; only the wire differs. Before
//! automatic reports are set the board answers requests and reports nothing, and the players
//! wait (as they wait for a DGT board's mode command).
//!
//! The board is strict ([`EmulatedBoard::unknown_bytes`]): a byte with even parity (a 7O1
//! UART's parity error: e.g. a DGT command, sent 8N1), a letter that starts no ChessLink
//! command, and the first character of a command with a bad block check or non-hex data are
//! not taken and counted (the parser then looks for a command in the characters after it).

use super::runner::EmulatedBoard;
use super::{ClockCommandStats, Emulator, Unknown};
use crate::core::observation::{FieldArray, Micros};
use crate::driver::millennium::codec::{
    AUTO_REPORT_OFF, ChessLinkReply, E2_AUTO_REPORT, E2_SCAN_TIME, LED_COUNT, block_check,
};

/// The DGT mode command that sets the players going on the inner emulator (UPDATE_BOARD).
const DGT_UPDATE_BOARD: u8 = 0x44;

/// The emulated ChessLink board.
#[derive(Debug)]
pub struct MillenniumEmulator {
    players: Emulator,
    version: (u8, u8),
    e2rom: [u8; 256],
    /// Host characters of a command under way (parity stripped).
    command: Vec<u8>,
    /// The last status sent (automatic or asked for).
    reported: Option<FieldArray>,
    /// Statuses sent.
    pub statuses: u64,
    /// Host commands with a bad block check (ignored, as the real board does).
    pub bad_commands: u64,
    /// Host bytes not taken (7-bit characters, or the raw byte for a parity error).
    unknown: Unknown,
}

/// Length of a host command starting with `letter`, block check included.
fn command_len(letter: u8) -> Option<usize> {
    match letter {
        b'V' | b'S' | b'X' | b'T' => Some(3),
        b'R' => Some(5),
        b'W' => Some(7),
        b'L' => Some(1 + 2 + 2 * LED_COUNT + 2),
        _ => None,
    }
}

fn hex_byte(d: &[u8]) -> u8 {
    let v = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    v(d[0]) << 4 | v(d[1])
}

impl MillenniumEmulator {
    /// A board whose players play `players`' script (its clock model is ignored: no clock),
    /// with firmware `version` and the E2ROM defaults (scan time 20, status on every scan
    /// until the host says otherwise, as the protocol document gives them; reports start only
    /// once the host writes address 02).
    pub fn new(players: Emulator, version: (u8, u8)) -> MillenniumEmulator {
        let mut e2rom = [0u8; 256];
        e2rom[usize::from(E2_SCAN_TIME)] = 20;
        e2rom[usize::from(E2_AUTO_REPORT)] = AUTO_REPORT_OFF;
        MillenniumEmulator {
            players,
            version,
            e2rom,
            command: Vec::new(),
            reported: None,
            statuses: 0,
            bad_commands: 0,
            unknown: Unknown::default(),
        }
    }

    /// What the board's sensors read now.
    pub fn fields(&self) -> &FieldArray {
        self.players.fields()
    }

    fn auto_reports(&self) -> bool {
        self.e2rom[usize::from(E2_AUTO_REPORT)] & 0x07 != AUTO_REPORT_OFF
    }

    fn send_status(&mut self, out: &mut Vec<u8>) {
        let fields = *self.players.fields();
        out.extend(ChessLinkReply::Status(Box::new(fields)).encode());
        self.reported = Some(fields);
        self.statuses += 1;
    }

    /// With automatic reports on: a status when the sensors changed since the last one.
    fn report_change(&mut self, out: &mut Vec<u8>) {
        if self.auto_reports() && self.reported.as_ref() != Some(self.players.fields()) {
            self.send_status(out);
        }
    }

    /// Carries out one complete, checked command; whether it switched automatic reports on.
    fn command(&mut self, c: &[u8], out: &mut Vec<u8>) -> bool {
        match c[0] {
            b'V' => out.extend(
                ChessLinkReply::Version {
                    major: self.version.0,
                    minor: self.version.1,
                }
                .encode(),
            ),
            b'S' => self.send_status(out),
            b'X' => out.extend(ChessLinkReply::Extinguished.encode()),
            b'L' => out.extend(ChessLinkReply::LedsSet.encode()),
            b'T' => {
                self.players.unplugged();
                self.reported = None;
            }
            b'R' => {
                let address = hex_byte(&c[1..]);
                let value = self.e2rom[usize::from(address)];
                out.extend(ChessLinkReply::Read { address, value }.encode());
            }
            _ => {
                let (address, value) = (hex_byte(&c[1..]), hex_byte(&c[3..]));
                self.e2rom[usize::from(address)] = value;
                out.extend(ChessLinkReply::Written { address, value }.encode());
                if address == E2_AUTO_REPORT && self.auto_reports() {
                    self.players
                        .host_input(&[DGT_UPDATE_BOARD], &mut Vec::new());
                    return true;
                }
            }
        }
        false
    }
}

impl EmulatedBoard for MillenniumEmulator {
    fn next_due(&self) -> Option<Micros> {
        self.players.next_due()
    }

    fn next_link_due(&self) -> Option<Micros> {
        None
    }

    fn link_time(&mut self, _now: Micros, _out: &mut Vec<u8>) {}

    fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        let mut reports_set = false;
        for &b in bytes {
            if b.count_ones() % 2 == 0 {
                // Even parity: a 7O1 UART's parity error.
                self.unknown.add(&[b]);
                continue;
            }
            self.command.push(b & 0x7F);
            while let Some(&letter) = self.command.first() {
                let Some(len) = command_len(letter) else {
                    self.unknown.add(&[letter]);
                    self.command.remove(0);
                    continue;
                };
                if self.command.len() < len {
                    break;
                }
                let c: Vec<u8> = self.command.drain(..len).collect();
                let (body, check) = c.split_at(len - 2);
                let hex_ok = c[1..].iter().all(u8::is_ascii_hexdigit);
                if hex_ok && hex_byte(check) == block_check(body) {
                    reports_set |= self.command(&c, out);
                } else {
                    self.bad_commands += 1;
                    self.unknown.add(&c[..1]);
                    self.command.splice(0..0, c[1..].iter().copied());
                }
            }
        }
        self.report_change(out);
        reports_set
    }

    fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        // Step by step: every change of the players' hands is a status of its own (a real
        // board merges changes closer than its 41 ms scan; the script's rarely are).
        while let Some(t) = self.players.next_due().filter(|t| *t <= now) {
            self.players.advance(t, &mut Vec::new());
            self.report_change(out);
        }
        self.players.advance(now, &mut Vec::new());
        self.report_change(out);
    }

    fn unplugged(&mut self) {
        self.players.unplugged();
        self.command.clear();
        self.reported = None;
    }

    fn reset(&mut self) {
        self.players.reset();
        self.e2rom[usize::from(E2_AUTO_REPORT)] = AUTO_REPORT_OFF;
    }

    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        self.players.after_plies(t, k)
    }

    fn plies_started(&self, t: Micros) -> usize {
        self.players.plies_started(t)
    }

    fn plies_settled(&self, t: Micros) -> usize {
        self.players.plies_settled(t)
    }

    fn finished(&self) -> bool {
        self.players.finished()
    }

    fn texts(&self) -> &[String] {
        &[]
    }

    fn clock_commands(&self) -> ClockCommandStats {
        ClockCommandStats::default()
    }

    fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::millennium::codec::{ChessLinkCommand, ChessLinkDecoder};
    use crate::sim::emulator::{ClockModel, EmulatorConfig, Script};
    use crate::sim::{SimConfig, pgn::parse_games};

    fn board() -> MillenniumEmulator {
        let games: Vec<_> = parse_games("1. e4 e5 2. Nf3 Nc6 *")
            .into_iter()
            .map(|g| g.unwrap())
            .collect();
        let script = Script::from_games(&games, &SimConfig::clean(1), 1_000_000);
        let players = Emulator::new(
            script,
            EmulatorConfig {
                clock: ClockModel::None,
                ..Default::default()
            },
        );
        MillenniumEmulator::new(players, (1, 4))
    }

    fn replies(bytes: &[u8]) -> Vec<ChessLinkReply> {
        let mut d = ChessLinkDecoder::new();
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        assert_eq!(d.bad_frames(), 0);
        out
    }

    #[test]
    fn answers_requests_and_reports_changes_once_asked_to() {
        let mut em = board();
        let mut out = Vec::new();
        assert!(!em.host_input(&ChessLinkCommand::Version.encode(), &mut out));
        assert_eq!(
            replies(&out),
            vec![ChessLinkReply::Version { major: 1, minor: 4 }]
        );
        // Nothing reported before automatic reports are set, though the players may move.
        out.clear();
        em.advance(60_000_000, &mut out);
        assert!(out.is_empty());
        let on = ChessLinkCommand::Write {
            address: 2,
            value: 3,
        }
        .encode();
        let mut em = board();
        assert!(em.host_input(&on, &mut out));
        let got = replies(&out);
        assert_eq!(
            got[0],
            ChessLinkReply::Written {
                address: 2,
                value: 3
            }
        );
        assert!(matches!(got[1], ChessLinkReply::Status(_)));
        out.clear();
        em.advance(600_000_000, &mut out);
        let statuses = replies(&out);
        // At least a lift and a placement per ply, each a whole board.
        assert!(statuses.len() >= 8, "{}", statuses.len());
        assert!(em.finished());
        let last = statuses.last().cloned();
        assert_eq!(last, Some(ChessLinkReply::Status(Box::new(*em.fields()))));
    }

    #[test]
    fn a_command_with_a_bad_check_is_ignored() {
        let mut em = board();
        let mut out = Vec::new();
        let mut bad = ChessLinkCommand::Version.encode();
        // A check digit changed, its parity right: a bad block check.
        bad[2] = crate::driver::millennium::codec::with_parity((bad[2] & 0x7F) ^ 0x01);
        em.host_input(&bad, &mut out);
        assert!(out.is_empty());
        assert_eq!(em.bad_commands, 1);
        em.host_input(&ChessLinkCommand::Status.encode(), &mut out);
        assert!(matches!(replies(&out)[..], [ChessLinkReply::Status(_)]));
        // The bad command's letter and check digits: not taken.
        assert_eq!(em.unknown_bytes(), 3, "{:02x?}", em.unknown_sample());
    }

    #[test]
    fn dgt_bytes_and_unknown_letters_are_counted_and_commands_still_taken() {
        let mut em = board();
        let mut out = Vec::new();
        // A DGT clock frame (8N1: even parity for every byte here) and a stray 'Z'.
        em.host_input(&[0x2B, 0x03, 0x03, 0x09, 0x00], &mut out);
        em.host_input(&crate::driver::millennium::codec::frame(b"Z"), &mut out);
        assert!(out.is_empty());
        assert_eq!(em.unknown_bytes(), 5 + 3, "{:02x?}", em.unknown_sample());
        assert_eq!(&em.unknown_sample()[..5], &[0x2B, 0x03, 0x03, 0x09, 0x00]);
        em.host_input(&ChessLinkCommand::Version.encode(), &mut out);
        assert_eq!(
            replies(&out),
            vec![ChessLinkReply::Version { major: 1, minor: 4 }]
        );
        assert_eq!(em.unknown_bytes(), 8);
        // Every command the daemon's codec can send is taken.
        let mut em = board();
        for c in [
            ChessLinkCommand::Version,
            ChessLinkCommand::Status,
            ChessLinkCommand::Write {
                address: 2,
                value: 3,
            },
            ChessLinkCommand::Read { address: 1 },
            ChessLinkCommand::Extinguish,
            ChessLinkCommand::Leds {
                slot: 1,
                patterns: Box::new([0xCC; LED_COUNT]),
            },
            ChessLinkCommand::Reset,
        ] {
            em.host_input(&c.encode(), &mut out);
        }
        assert_eq!(em.unknown_bytes(), 0, "{:02x?}", em.unknown_sample());
    }
}
