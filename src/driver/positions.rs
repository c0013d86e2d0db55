//! Whole positions into square changes, for every board family that reports whole positions
//! (the Millennium ChessLink's statuses, the Certabo's lines) rather than square changes.
//!
//! The core is fed square changes ([`Observation::Field`]) so that its inference sees a board
//! change square by square, as it does with a board that reports changes; a whole position is
//! a [`Observation::BoardDump`] only when there is nothing to compare it with (the first of a
//! stream) or when the driver says it answers a board request. Within one position the order
//! the hand made the changes in is lost: [`PositionDiff`] reports the squares that emptied
//! first, then the others, each group in field order (0 = a8 … 63 = h1), so that a capture
//! reads as "the taker lifted, then put down" and never as two pieces on one square.

use crate::core::observation::{FieldArray, Observation, SquareReading};
use crate::driver::Message;

/// The last position a board reported, and the observations that turn the next one into
/// square changes.
#[derive(Debug, Clone, Default)]
pub struct PositionDiff {
    last: Option<Box<FieldArray>>,
}

impl PositionDiff {
    /// No position reported yet: the next one is a board dump.
    pub fn new() -> PositionDiff {
        PositionDiff::default()
    }

    /// The last position reported, if any.
    pub fn last(&self) -> Option<&FieldArray> {
        self.last.as_deref()
    }

    /// Reports `fields`: an [`Observation::BoardDump`] when no position was reported before,
    /// else one [`Observation::Field`] per square that differs from the last position (the
    /// squares that emptied first, then the others, each in field order; nothing when nothing
    /// changed).
    pub fn report(&mut self, fields: &FieldArray, out: &mut Vec<Message>) {
        let Some(last) = self.last.as_deref_mut() else {
            self.dump(fields, out);
            return;
        };
        let changed = |i: &usize| last[*i] != fields[*i];
        let emptied = (0..64)
            .filter(changed)
            .filter(|i| fields[*i] == SquareReading::Empty);
        let filled = (0..64)
            .filter(changed)
            .filter(|i| fields[*i] != SquareReading::Empty);
        out.extend(emptied.chain(filled).map(|i| {
            Message::Observation(Observation::Field {
                index: i as u8,
                reading: fields[i],
            })
        }));
        *last = *fields;
    }

    /// Reports `fields` as an [`Observation::BoardDump`] whatever came before (the answer to a
    /// board request).
    pub fn dump(&mut self, fields: &FieldArray, out: &mut Vec<Message>) {
        out.push(Message::Observation(Observation::BoardDump(Box::new(
            *fields,
        ))));
        self.last = Some(Box::new(*fields));
    }

    /// Forgets the last position: the next one is reported as a board dump.
    pub fn forget(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Color, Role};

    fn field(index: u8, reading: SquareReading) -> Message {
        Message::Observation(Observation::Field { index, reading })
    }

    #[test]
    fn first_a_dump_then_emptied_squares_first_then_filled_each_in_field_order() {
        let pawn = SquareReading::Piece(Color::White.pawn());
        let knight = SquareReading::Piece(Role::Knight.of(Color::Black));
        let mut start = [SquareReading::Empty; 64];
        start[52] = pawn;
        start[1] = knight;
        let mut d = PositionDiff::new();
        assert!(d.last().is_none());
        let mut out = Vec::new();
        d.report(&start, &mut out);
        assert_eq!(
            out,
            vec![Message::Observation(Observation::BoardDump(Box::new(
                start
            )))]
        );
        let mut next = start;
        next[52] = SquareReading::Empty;
        next[36] = pawn;
        next[1] = SquareReading::Empty;
        next[18] = knight;
        out.clear();
        d.report(&next, &mut out);
        assert_eq!(
            out,
            vec![
                field(1, SquareReading::Empty),
                field(52, SquareReading::Empty),
                field(18, knight),
                field(36, pawn),
            ]
        );
        assert_eq!(d.last(), Some(&next));
        out.clear();
        d.report(&next, &mut out);
        assert!(out.is_empty(), "nothing changed");
        d.dump(&next, &mut out);
        assert!(matches!(
            out[..],
            [Message::Observation(Observation::BoardDump(_))]
        ));
        d.forget();
        out.clear();
        d.report(&start, &mut out);
        assert!(matches!(
            out[..],
            [Message::Observation(Observation::BoardDump(_))]
        ));
    }
}
