//! What a DGT board's own memory holds after a simulated game (`docs/dgt-protocol.md` §1.6), as
//! the family-neutral [`MemoryEntry`] list a driver makes of it: for tests of the recovery from
//! the board's memory, and for board emulators that answer a memory request.
//!
//! From the `rx` records of a simulated capture (one board): a board dump is the board knowing
//! its whole position (the start position it recognised) — a [`MemoryEntry::Board`] anchor;
//! every field update a [`MemoryEntry::Field`], `quick` when it came less than [`QUICK`] after
//! the previous field update; every clock reading whose lever side changed while the clock ran
//! a [`MemoryEntry::Press`] of the side that stopped, with the time its face shows after the
//! press (as the board writes the time of the clock that just stopped). The board's rule that the
//! last field-change entry is overwritten "if only a single piece keeps changing" is modelled on
//! request ([`MemoryLog::overwriting`]: a change of the field of the last entry overwrites it;
//! §1.6 says no more). Not modelled: presses missed when the lever is pressed very fast, and the
//! cyclic overwriting of the oldest entries (cut the list to model it).

use crate::capture::{Record, RecordKind};
use crate::core::clock::{ClockChange, ClockTracker};
use crate::core::observation::{ClockSide, MemoryEntry, Micros};
use crate::driver::dgt::{DgtDecoder, DgtMessage};

/// A field change logged less than this after the previous one is marked `quick` (the board's
/// "less than ~250 ms" bit).
pub const QUICK: Micros = 250_000;

/// Builds a board's memory entry by entry from what the board sent, in time order.
#[derive(Debug, Default)]
pub struct MemoryLog {
    entries: Vec<MemoryEntry>,
    last_field: Option<Micros>,
    clock: ClockTracker,
    overwrite: bool,
}

impl MemoryLog {
    /// An empty memory.
    pub fn new() -> MemoryLog {
        MemoryLog::default()
    }

    /// An empty memory that overwrites the last entry when the next field change is on the same
    /// field (one reading of §1.6's "if only a single piece keeps changing, the last
    /// field-change entry is overwritten"): a piece lifted and put back leaves one entry of the
    /// field reading what it read before, a pawn exchanged on the last rank the promoted piece.
    pub fn overwriting() -> MemoryLog {
        MemoryLog {
            overwrite: true,
            ..MemoryLog::default()
        }
    }

    /// Log one message the board sent at `t` (messages that are not logged are ignored).
    pub fn message(&mut self, t: Micros, msg: &DgtMessage) {
        match msg {
            DgtMessage::BoardDump(fields) => self.entries.push(MemoryEntry::Board(fields.clone())),
            DgtMessage::FieldUpdate { index, reading } => {
                let quick = self.last_field.is_some_and(|p| t - p < QUICK);
                self.last_field = Some(t);
                if self.overwrite
                    && let Some(MemoryEntry::Field {
                        index: last,
                        reading: was,
                        ..
                    }) = self.entries.last_mut()
                    && *last == *index
                {
                    *was = *reading;
                    return;
                }
                self.entries.push(MemoryEntry::Field {
                    index: *index,
                    reading: *reading,
                    quick,
                });
            }
            DgtMessage::ClockTimes(reading) => {
                if let ClockChange::Press { side } = self.clock.update(*reading) {
                    let face = match side {
                        ClockSide::Left => reading.left,
                        ClockSide::Right => reading.right,
                    };
                    self.entries.push(MemoryEntry::Press {
                        side,
                        millis: face.millis,
                    });
                }
            }
            _ => {}
        }
    }

    /// Log that the board lost track of its position (e.g. pieces on the back ranks in no
    /// known order) until the next anchor.
    pub fn unknown(&mut self) {
        self.entries.push(MemoryEntry::Unknown);
    }

    /// The entries so far, oldest first.
    pub fn entries(&self) -> &[MemoryEntry] {
        &self.entries
    }

    /// The memory, oldest first.
    pub fn into_entries(self) -> Vec<MemoryEntry> {
        self.entries
    }
}

/// The memory of everything the board sent in `records` (one board's `rx` records in time
/// order; `tx` and other records are skipped).
pub fn memory_of(records: &[Record]) -> Vec<MemoryEntry> {
    log_records(MemoryLog::new(), records)
}

/// [`memory_of`] with the board overwriting a field's last entry ([`MemoryLog::overwriting`]).
pub fn memory_of_overwriting(records: &[Record]) -> Vec<MemoryEntry> {
    log_records(MemoryLog::overwriting(), records)
}

fn log_records(mut log: MemoryLog, records: &[Record]) -> Vec<MemoryEntry> {
    let mut decoder = DgtDecoder::new();
    let mut messages = Vec::new();
    for r in records {
        if let RecordKind::Rx(bytes) = &r.kind {
            messages.clear();
            decoder.decode(bytes, &mut messages);
            for m in &messages {
                log.message(r.t, m);
            }
        }
    }
    log.into_entries()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::{ClockFace, ClockReading, SquareReading};

    fn reading(left_ms: u32, right_ms: u32, right_up: bool) -> ClockReading {
        ClockReading {
            left: ClockFace {
                millis: left_ms,
                ..Default::default()
            },
            right: ClockFace {
                millis: right_ms,
                ..Default::default()
            },
            running: true,
            right_side_up: right_up,
            left_turn: !right_up,
            right_turn: right_up,
            battery_low: false,
        }
    }

    #[test]
    fn quick_follows_the_gaps_and_presses_the_lever() {
        let mut log = MemoryLog::new();
        let empty = SquareReading::Empty;
        log.message(0, &DgtMessage::ClockTimes(reading(60_000, 60_000, false)));
        log.message(
            1_000_000,
            &DgtMessage::FieldUpdate {
                index: 52,
                reading: empty,
            },
        );
        log.message(
            1_200_000,
            &DgtMessage::FieldUpdate {
                index: 36,
                reading: empty,
            },
        );
        log.message(
            1_500_000,
            &DgtMessage::FieldUpdate {
                index: 44,
                reading: empty,
            },
        );
        // Same lever: a tick; then the left player presses.
        log.message(
            2_000_000,
            &DgtMessage::ClockTimes(reading(59_000, 60_000, false)),
        );
        log.message(
            3_000_000,
            &DgtMessage::ClockTimes(reading(58_000, 60_000, true)),
        );
        let quick: Vec<bool> = log
            .entries()
            .iter()
            .filter_map(|e| match e {
                MemoryEntry::Field { quick, .. } => Some(*quick),
                _ => None,
            })
            .collect();
        assert_eq!(quick, [false, true, false]);
        assert_eq!(
            log.entries().last(),
            Some(&MemoryEntry::Press {
                side: ClockSide::Left,
                millis: 58_000
            })
        );
        assert_eq!(log.entries().len(), 4);
    }

    #[test]
    fn overwriting_keeps_one_entry_per_run_of_changes_of_a_field() {
        let knight = SquareReading::Piece(shakmaty::Piece::from_char('N').expect("piece"));
        let change = |index, reading| DgtMessage::FieldUpdate { index, reading };
        for (overwrite, expected) in [(false, 4), (true, 2)] {
            let mut log = if overwrite {
                MemoryLog::overwriting()
            } else {
                MemoryLog::new()
            };
            log.message(0, &change(62, SquareReading::Empty));
            log.message(900_000, &change(45, knight));
            log.message(1_000_000, &change(45, SquareReading::Empty));
            log.message(2_000_000, &change(45, knight));
            assert_eq!(log.entries().len(), expected);
            assert!(matches!(
                log.entries().last(),
                Some(MemoryEntry::Field { index: 45, reading, .. }) if *reading == knight
            ));
        }
    }
}
