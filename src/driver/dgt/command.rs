//! Host→board commands (§1.2) and clock commands relayed by the board (§2.2).
//!
//! Only safe commands can be expressed: there is no way to encode the bootloader (0x4E) or the
//! EEPROM-writing scan commands (0x51, 0x53, 0x54).

/// Start of a clock message inside the `0x2B` wrapper (CLOCK_START_MESSAGE).
const CLOCK_START: u8 = 0x03;
/// End of a clock message (CLOCK_END_MESSAGE).
const CLOCK_END: u8 = 0x00;
/// DGT_CLOCK_MESSAGE, the wrapper byte.
const CLOCK_MESSAGE: u8 = 0x2B;

/// A host→board command in single-board mode (§1.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DgtCommand {
    /// 0x40: back to IDLE, stops any update mode.
    Reset,
    /// 0x41: send the clock times (BWTIME).
    SendClock,
    /// 0x42: send a board dump.
    SendBoard,
    /// 0x43: UPDATE mode (field updates plus clock data at least once a second).
    UpdateMode,
    /// 0x44: UPDATE_BOARD mode (field updates only; clock commands get no ack).
    UpdateBoardMode,
    /// 0x45: send the 5-digit serial number.
    SerialNumber,
    /// 0x46: send the bus address.
    BusAddress,
    /// 0x47: send the trademark text.
    Trademark,
    /// 0x49: send the board's memory of every field change and clock press (EE_MOVES, up to
    /// 0x1F00 bytes: about 8 s at 9600 baud).
    SendEeMoves,
    /// 0x4B: UPDATE_NICE mode (field updates plus clock data when it changes).
    UpdateNice,
    /// 0x4C: send the battery status.
    Battery,
    /// 0x4D: send the firmware version.
    Version,
    /// 0x55: send the 10-character serial number.
    LongSerialNumber,
    /// 0x2B: a clock command relayed to the clock on the board cable.
    Clock(ClockCommand),
}

impl DgtCommand {
    /// The bytes to send to the board.
    pub fn encode(&self) -> Vec<u8> {
        let byte = match self {
            DgtCommand::Reset => 0x40,
            DgtCommand::SendClock => 0x41,
            DgtCommand::SendBoard => 0x42,
            DgtCommand::UpdateMode => 0x43,
            DgtCommand::UpdateBoardMode => 0x44,
            DgtCommand::SerialNumber => 0x45,
            DgtCommand::BusAddress => 0x46,
            DgtCommand::Trademark => 0x47,
            DgtCommand::SendEeMoves => 0x49,
            DgtCommand::UpdateNice => 0x4B,
            DgtCommand::Battery => 0x4C,
            DgtCommand::Version => 0x4D,
            DgtCommand::LongSerialNumber => 0x55,
            DgtCommand::Clock(c) => return c.encode(),
        };
        vec![byte]
    }
}

/// A clock command, sent through the board as `2B <n> 03 <cmd> <data…> 00` (§2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockCommand {
    /// 0x01 DISPLAY (XL): raw 7-segment data.
    Display {
        /// Segment bytes in wire order (digits C, B, A, F, E, D of `1A:BC 1D:EF`).
        segments: [u8; 6],
        /// Icon bits (dots, colons, leading "1"s).
        icons: u8,
        /// Beep when shown.
        beep: bool,
    },
    /// 0x02 ICONS: the five icon bytes i0..i4.
    Icons([u8; 5]),
    /// 0x03 END: stop showing a message, back to the times.
    EndText,
    /// 0x08 BUTTON: ask for the current button.
    Button,
    /// 0x09 VERSION: ask for the clock version (a clock's presence test).
    Version,
    /// 0x0A SETNRUN: set both times and run. Times are sent as given (binary, as picochess
    /// and dgtdriver do; **UNVERIFIED** on hardware). Only carried out in clock mode 23.
    SetAndRun {
        /// Left hours (`| 0x10` = count up).
        left_hours: u8,
        /// Left minutes.
        left_minutes: u8,
        /// Left seconds.
        left_seconds: u8,
        /// Right hours (`| 0x10` = count up).
        right_hours: u8,
        /// Right minutes.
        right_minutes: u8,
        /// Right seconds.
        right_seconds: u8,
        /// 0x01 left counts down, 0x02 right counts down, 0x04 pause, 0x08 toggle on lever.
        flags: u8,
    },
    /// 0x0B BEEP for `units_64ms` × 64 ms.
    Beep {
        /// Duration in units of 64 ms.
        units_64ms: u8,
    },
    /// 0x0C ASCII text (DGT 3000 only): 8 characters, padded with spaces or truncated;
    /// characters outside printable ASCII become `?`.
    Ascii {
        /// The text.
        text: String,
        /// Beep byte (0 = none).
        beep: u8,
    },
    /// 0x0D Revelation II ASCII text: 11 characters, padded/truncated like [`ClockCommand::Ascii`].
    Rev2Ascii {
        /// The text.
        text: String,
        /// Beep byte (0 = none).
        beep: u8,
    },
}

impl ClockCommand {
    /// The full `0x2B` frame to send to the board.
    pub fn encode(&self) -> Vec<u8> {
        let (cmd, data): (u8, Vec<u8>) = match self {
            ClockCommand::Display {
                segments,
                icons,
                beep,
            } => {
                let mut d = segments.to_vec();
                d.push(*icons);
                d.push(if *beep { 0x03 } else { 0x01 });
                (0x01, d)
            }
            ClockCommand::Icons(i) => {
                let mut d = i.to_vec();
                d.extend([0, 0, 0]);
                (0x02, d)
            }
            ClockCommand::EndText => (0x03, Vec::new()),
            ClockCommand::Button => (0x08, Vec::new()),
            ClockCommand::Version => (0x09, Vec::new()),
            ClockCommand::SetAndRun {
                left_hours,
                left_minutes,
                left_seconds,
                right_hours,
                right_minutes,
                right_seconds,
                flags,
            } => (
                0x0A,
                vec![
                    *left_hours,
                    *left_minutes,
                    *left_seconds,
                    *right_hours,
                    *right_minutes,
                    *right_seconds,
                    *flags,
                ],
            ),
            ClockCommand::Beep { units_64ms } => (0x0B, vec![*units_64ms]),
            ClockCommand::Ascii { text, beep } => {
                let mut d = padded_text(text, 8);
                d.push(*beep);
                (0x0C, d)
            }
            ClockCommand::Rev2Ascii { text, beep } => {
                let mut d = padded_text(text, 11);
                d.push(*beep);
                (0x0D, d)
            }
        };
        let mut out = Vec::with_capacity(data.len() + 5);
        out.push(CLOCK_MESSAGE);
        out.push((data.len() + 3) as u8);
        out.push(CLOCK_START);
        out.push(cmd);
        out.extend(data);
        out.push(CLOCK_END);
        out
    }
}

/// Exactly `n` printable ASCII bytes: truncated, or padded on the right with spaces.
fn padded_text(text: &str, n: usize) -> Vec<u8> {
    let mut out: Vec<u8> = text
        .chars()
        .take(n)
        .map(|c| {
            if (' '..='~').contains(&c) {
                c as u8
            } else {
                b'?'
            }
        })
        .collect();
    out.resize(n, b' ');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_byte_commands() {
        assert_eq!(DgtCommand::UpdateNice.encode(), vec![0x4B]);
        assert_eq!(DgtCommand::Version.encode(), vec![0x4D]);
        assert_eq!(DgtCommand::LongSerialNumber.encode(), vec![0x55]);
        let all = [
            DgtCommand::Reset,
            DgtCommand::SendClock,
            DgtCommand::SendBoard,
            DgtCommand::UpdateMode,
            DgtCommand::UpdateBoardMode,
            DgtCommand::SerialNumber,
            DgtCommand::BusAddress,
            DgtCommand::Trademark,
            DgtCommand::SendEeMoves,
            DgtCommand::UpdateNice,
            DgtCommand::Battery,
            DgtCommand::Version,
            DgtCommand::LongSerialNumber,
        ];
        for c in all {
            let b = c.encode();
            assert_eq!(b.len(), 1);
            assert!(![0x4E, 0x51, 0x53, 0x54].contains(&b[0]), "{c:?}");
        }
    }

    #[test]
    fn clock_vectors() {
        let v = |c: ClockCommand| DgtCommand::Clock(c).encode();
        assert_eq!(v(ClockCommand::Version), [0x2B, 0x03, 0x03, 0x09, 0x00]);
        assert_eq!(
            v(ClockCommand::Beep { units_64ms: 16 }),
            [0x2B, 0x04, 0x03, 0x0B, 0x10, 0x00]
        );
        assert_eq!(
            v(ClockCommand::Ascii {
                text: "HELLO".into(),
                beep: 0
            }),
            [
                0x2B, 0x0C, 0x03, 0x0C, 0x48, 0x45, 0x4C, 0x4C, 0x4F, 0x20, 0x20, 0x20, 0x00, 0x00
            ]
        );
        assert_eq!(v(ClockCommand::EndText), [0x2B, 0x03, 0x03, 0x03, 0x00]);
        assert_eq!(v(ClockCommand::Button), [0x2B, 0x03, 0x03, 0x08, 0x00]);
    }

    #[test]
    fn clock_frame_lengths() {
        let display = ClockCommand::Display {
            segments: [1, 2, 3, 4, 5, 6],
            icons: 0x12,
            beep: true,
        };
        assert_eq!(
            display.encode(),
            [0x2B, 0x0B, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x12, 0x03, 0x00]
        );
        let icons = ClockCommand::Icons([1, 2, 3, 4, 5]).encode();
        assert_eq!(icons, [0x2B, 0x0B, 0x03, 0x02, 1, 2, 3, 4, 5, 0, 0, 0, 0]);
        let snr = ClockCommand::SetAndRun {
            left_hours: 1,
            left_minutes: 30,
            left_seconds: 0,
            right_hours: 0,
            right_minutes: 45,
            right_seconds: 5,
            flags: 0x01,
        };
        assert_eq!(
            snr.encode(),
            [0x2B, 0x0A, 0x03, 0x0A, 1, 30, 0, 0, 45, 5, 0x01, 0x00]
        );
        let text = ClockCommand::Ascii {
            text: "Ünïcode long text".into(),
            beep: 3,
        }
        .encode();
        assert_eq!(&text[4..12], b"?n?code ");
        assert_eq!(text.len(), 14);
        let rev = ClockCommand::Rev2Ascii {
            text: "e4".into(),
            beep: 0,
        }
        .encode();
        assert_eq!(rev.len(), 17);
        assert_eq!(rev[1], 0x0F);
        assert_eq!(rev[3], 0x0D);
        assert_eq!(&rev[4..15], b"e4         ");
    }
}
