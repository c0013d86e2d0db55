//! An emulated Chessnut Air / Pro / GO, as a host sees its GATT server
//! (`docs/boards.md` §Chessnut, after the real GO's facts): nothing on the position
//! characteristic until the host writes `21 01 00`; then a 38-byte position frame (`01 24`,
//! 32 square bytes from h8 to a1 low nibble first, a 4-byte little-endian tick) about ten times
//! a second, also when nothing changes. Battery `29 01 00` is answered `2a 02 <b> <c>` on the
//! reply characteristic; LEDs `0a 08` + 8 bytes are taken and kept.
//!
//! The players are the DGT [`Emulator`]'s, so the same scripts play on every family. The board
//! is strict: any other write, a write to another characteristic or of another length is not
//! taken and counted ([`GattBoard::unknown_writes`]). The worst the sources report is on offer:
//! a square whose piece is not sensed (the real GO's a8 rook) while a piece stands still on
//! it, and a board turned round (h8 where a1 should be).

use super::gatt::{GattBoard, GattChar, GattService, Notification};
use super::{Emulator, Unknown};
use crate::core::observation::{FieldArray, Micros};
use crate::driver::GattProfile;
use crate::driver::chessnut::codec::{
    BATTERY_REQUEST, BATTERY_TAG, COMMAND_SERVICE, LEDS, POSITION_CHAR, POSITION_SERVICE, PROFILE,
    REPLY_CHAR, START_STREAM, WRITE_CHAR, encode_position,
};

/// The DGT mode command that sets the players going on the inner emulator (UPDATE_BOARD).
const DGT_UPDATE_BOARD: u8 = 0x44;
/// Script time between two position frames (about ten a second).
pub const FRAME_EVERY: Micros = 100_000;

/// The board's GATT server (`docs/boards.md` §Chessnut): the position service with its
/// notify characteristic, the command service with the write and the reply characteristics.
pub static SERVICES: [GattService; 2] = [
    GattService {
        uuid: POSITION_SERVICE,
        chars: &[GattChar {
            uuid: POSITION_CHAR,
            flags: &["notify"],
        }],
    },
    GattService {
        uuid: COMMAND_SERVICE,
        chars: &[
            GattChar {
                uuid: WRITE_CHAR,
                flags: &["write-without-response", "write"],
            },
            GattChar {
                uuid: REPLY_CHAR,
                flags: &["notify"],
            },
        ],
    },
];

/// How an emulated Chessnut misbehaves.
#[derive(Debug, Clone, Default)]
pub struct ChessnutConfig {
    /// The advertised name (`Chessnut GO` by default).
    pub name: Option<String>,
    /// A field (0 = a8 ... 63 = h1) whose piece is never sensed.
    pub unseen: Option<usize>,
    /// The board stands turned round: its h8 is the game's a1.
    pub turned: bool,
    /// Battery percentage reported.
    pub battery: u8,
}

/// The emulated board.
#[derive(Debug)]
pub struct ChessnutEmulator {
    players: Emulator,
    cfg: ChessnutConfig,
    name: String,
    streaming: bool,
    next_frame: Option<Micros>,
    tick: u32,
    /// The last LED pattern the host set.
    pub leds: [u8; 8],
    /// Position frames sent.
    pub frames: u64,
    taken: u64,
    unknown: Unknown,
    first_unknown: Option<(String, Vec<u8>)>,
}

impl ChessnutEmulator {
    /// A board whose players play `players`' script (its clock is ignored: the board has
    /// none), misbehaving as `cfg` says.
    pub fn new(players: Emulator, cfg: ChessnutConfig) -> ChessnutEmulator {
        let name = cfg.name.clone().unwrap_or_else(|| "Chessnut GO".into());
        ChessnutEmulator {
            players,
            cfg,
            name,
            streaming: false,
            next_frame: None,
            tick: 0,
            leds: [0; 8],
            frames: 0,
            taken: 0,
            unknown: Unknown::default(),
            first_unknown: None,
        }
    }

    /// What the sensors read now (the unseen square, the orientation applied).
    pub fn sensed(&self) -> FieldArray {
        let mut f = *self.players.fields();
        if self.cfg.turned {
            f.reverse();
        }
        if let Some(k) = self.cfg.unseen {
            f[k] = Default::default();
        }
        f
    }

    fn refuse(&mut self, char: &str, bytes: &[u8]) {
        self.unknown.add(bytes);
        if bytes.is_empty() {
            self.unknown.count += 1;
        }
        if self.first_unknown.is_none() {
            self.first_unknown = Some((char.to_string(), bytes.to_vec()));
        }
    }
}

impl GattBoard for ChessnutEmulator {
    fn name(&self) -> &str {
        &self.name
    }

    fn profile(&self) -> &'static GattProfile {
        &PROFILE
    }

    fn services(&self) -> &'static [GattService] {
        &SERVICES
    }

    fn write(&mut self, now: Micros, char: &str, bytes: &[u8], out: &mut Vec<Notification>) {
        if !char.eq_ignore_ascii_case(WRITE_CHAR) {
            return self.refuse(char, bytes);
        }
        match bytes {
            b if b == START_STREAM => {
                if !self.streaming {
                    self.streaming = true;
                    self.players
                        .host_input(&[DGT_UPDATE_BOARD], &mut Vec::new());
                    self.next_frame = Some(now);
                }
            }
            b if b == BATTERY_REQUEST => {
                let level = self.cfg.battery.min(100);
                out.push(Notification {
                    char: REPLY_CHAR,
                    bytes: vec![BATTERY_TAG, 0x02, level, 0x00],
                });
            }
            [a, b, rest @ ..] if [*a, *b] == LEDS && rest.len() == 8 => {
                self.leds.copy_from_slice(rest);
            }
            _ => return self.refuse(char, bytes),
        }
        self.taken += 1;
    }

    fn advance(&mut self, now: Micros, out: &mut Vec<Notification>) {
        while let Some(at) = self.next_frame.filter(|t| *t <= now) {
            // The players' hands up to the frame's time, then the frame.
            while let Some(t) = self.players.next_due().filter(|t| *t <= at) {
                self.players.advance(t, &mut Vec::new());
            }
            self.players.advance(at, &mut Vec::new());
            out.push(Notification {
                char: POSITION_CHAR,
                bytes: encode_position(&self.sensed(), self.tick),
            });
            self.tick = self.tick.wrapping_add(1);
            self.frames += 1;
            self.next_frame = Some(at + FRAME_EVERY);
        }
        if !self.streaming {
            // Nobody listens: the players wait (the script has not started).
            self.players.advance(now, &mut Vec::new());
        }
    }

    fn disconnected(&mut self) {
        self.streaming = false;
        self.next_frame = None;
    }

    fn finished(&self) -> bool {
        self.players.finished()
    }

    fn plies_settled(&self, t: Micros) -> usize {
        self.players.plies_settled(t)
    }

    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        self.players.after_plies(t, k)
    }

    fn unknown_writes(&self) -> u64 {
        self.unknown.count
    }

    fn unknown_sample(&self) -> Option<&(String, Vec<u8>)> {
        self.first_unknown.as_ref()
    }

    fn writes_taken(&self) -> u64 {
        self.taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::chessnut::codec::{PositionFrame, parse_position};
    use crate::sim::emulator::{EmulatorConfig, Script};

    fn board(cfg: ChessnutConfig) -> ChessnutEmulator {
        let games = crate::daemon::demo::demo_games();
        let script = Script::from_games(
            &games[..1],
            &crate::sim::SimConfig::new(crate::sim::Style::Human, 3),
            1_000_000,
        );
        ChessnutEmulator::new(Emulator::new(script, EmulatorConfig::default()), cfg)
    }

    #[test]
    fn silent_until_started_then_ten_frames_a_second() {
        let mut b = board(ChessnutConfig::default());
        let mut out = Vec::new();
        b.advance(5_000_000, &mut out);
        assert!(out.is_empty());
        b.write(5_000_000, WRITE_CHAR, &START_STREAM, &mut out);
        b.advance(6_000_000, &mut out);
        assert_eq!(out.len(), 11);
        assert!(
            out.iter()
                .all(|n| n.char == POSITION_CHAR && n.bytes.len() == 38)
        );
        assert!(matches!(
            parse_position(&out[0].bytes),
            PositionFrame::Position { .. }
        ));
        assert_eq!(b.unknown_writes(), 0);
        assert_eq!(b.writes_taken(), 1);
    }

    #[test]
    fn battery_leds_and_strictness() {
        let mut b = board(ChessnutConfig {
            battery: 140,
            ..Default::default()
        });
        let mut out = Vec::new();
        b.write(0, WRITE_CHAR, &BATTERY_REQUEST, &mut out);
        assert_eq!(out[0].bytes, [0x2a, 0x02, 100, 0]);
        assert_eq!(out[0].char, REPLY_CHAR);
        b.write(
            0,
            WRITE_CHAR,
            &[0x0a, 0x08, 1, 2, 3, 4, 5, 6, 7, 8],
            &mut out,
        );
        assert_eq!(b.leds, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(b.unknown_writes(), 0);
        b.write(0, WRITE_CHAR, &[0x0a, 0x08, 1], &mut out);
        b.write(0, POSITION_CHAR, &START_STREAM, &mut out);
        b.write(0, WRITE_CHAR, &[0x44], &mut out);
        assert_eq!(b.unknown_writes(), 7);
        assert_eq!(b.unknown_sample().unwrap().1, vec![0x0a, 0x08, 1]);
    }

    #[test]
    fn unseen_square_and_turned_board() {
        let mut b = board(ChessnutConfig {
            unseen: Some(0),
            turned: true,
            ..Default::default()
        });
        let f = b.sensed();
        assert_eq!(f[0], Default::default());
        assert_eq!(f[63], b.players.fields()[0]);
        let mut out = Vec::new();
        b.write(0, WRITE_CHAR, &START_STREAM, &mut out);
        b.advance(0, &mut out);
        let PositionFrame::Position { fields, .. } = parse_position(&out[0].bytes) else {
            panic!("not a position");
        };
        assert_eq!(*fields, f);
    }
}
