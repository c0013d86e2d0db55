//! Misreads, drop-outs and junk: a square's reading changes only when a majority of the last
//! three lines reads the new thing.
//!
//! What goes wrong on a Certabo board's readers (the samples in `tests/data/certabo/`): junk
//! ids on empty squares, different in every line (set A: 16-37 % of the empty squares of each
//! line); one or two bytes of an id misread (`B-h7-lifted-noise`: five of 32 ids at once, off
//! in one or two of their last three bytes; picochess answers with a majority over the last
//! three lines for boards with "low gain" chips, Certabo's software with the most frequent
//! known reading over its history); a square dropping out (reading empty).
//!
//! The rule here, picochess's majority: a square keeps its accepted reading until
//! [`CONFIRM_LINES`] of the last [`WINDOW_LINES`] lines read the same new thing there (empty
//! forms count as one, [`PieceId::normalized`]) — two successive lines, or two with one line
//! between that reads anything else (a misread or a drop-out of a new piece does not put its
//! change off to the line where the next move begins; junk between two empty readings of a
//! lifted piece's square does not put the lift off) — but not when the old reading, a piece,
//! is read again after the new one was first read (a piece read between two empty lines is
//! still there). Errors drawn afresh in every line, even line after line at a low-gain chip's
//! rate, are never accepted unless the same wrong reading comes twice in three lines; a lifted
//! piece and a placed one are accepted one line (about 0.56 s) after they happen, two when a
//! read between was spoilt, and count from the line they were first read in. Matching a
//! misread id to the nearest known id would be wrong: the ids of one set share their first
//! bytes, and in set A a king and a pawn (`3 0 84 107 52` / `… 56`), a rook and a pawn, a rook
//! and a knight differ in a single byte, so a one-byte misread can name another piece.
//!
//! Errors that hold a majority are read as changes: a square that drops out for two of three
//! lines is a lifted piece, a stable misread an unknown id.

use super::codec::{CertaboLine, PieceId, SQUARES};

/// Lines of the last [`WINDOW_LINES`] that must read a new thing before a square's reading
/// changes.
pub const CONFIRM_LINES: u32 = 2;
/// Lines a square's accepted reading must have stood before it counts as settled (for
/// calibration): about 3.4 s at the board's two lines a second.
pub const SETTLE_LINES: u32 = 6;

/// Lines a new reading is judged over: it must be read in a majority of them.
pub const WINDOW_LINES: usize = 3;

#[derive(Debug, Clone, Copy, Default)]
struct Square {
    accepted: PieceId,
    /// The readings of the last [`WINDOW_LINES`] lines, newest last.
    recent: [PieceId; WINDOW_LINES],
    /// The line the accepted reading was first read in.
    read_at: u64,
    /// Lines since `accepted` last changed.
    since: u32,
}

/// The accepted reading of every square.
#[derive(Debug, Clone)]
pub struct ReadFilter {
    squares: [Square; SQUARES],
    lines: u64,
    ignored: u64,
}

impl Default for ReadFilter {
    fn default() -> Self {
        ReadFilter {
            squares: [Square::default(); SQUARES],
            lines: 0,
            ignored: 0,
        }
    }
}

impl ReadFilter {
    /// Every square accepted empty, nothing seen yet.
    pub fn new() -> ReadFilter {
        ReadFilter::default()
    }

    /// Takes one line, no id known as a piece ([`ReadFilter::update_known`]); whether an
    /// accepted reading changed.
    pub fn update(&mut self, line: &CertaboLine) -> bool {
        self.update_known(line, |_| false)
    }

    /// Takes one line; whether an accepted reading changed.
    ///
    /// A square's reading changes to a new one read in [`CONFIRM_LINES`] of the last
    /// [`WINDOW_LINES`] lines (this one included) — a majority — unless the accepted reading,
    /// when it is a piece, was read again after the new one was first read (a piece read
    /// between two empty lines is still there: readers drop out to empty, they never read an
    /// absent piece). The change counts from the first of those lines ([`ReadFilter::read_at`]).
    ///
    /// A new reading like the piece that stood there (three bytes the same,
    /// [`PieceId::resembles`]) that `known` does not know as a piece could be that piece
    /// misread the same way twice (a low-gain chip): every line of the window must read it.
    pub fn update_known(&mut self, line: &CertaboLine, known: impl Fn(&PieceId) -> bool) -> bool {
        self.lines += 1;
        let now = self.lines;
        let mut changed = false;
        for (sq, raw) in self.squares.iter_mut().zip(line.squares.iter()) {
            let r = raw.normalized();
            sq.since = sq.since.saturating_add(1);
            // The oldest reading leaves the window: noise if it was read while the accepted
            // reading stood and is not it.
            let leaving = now.checked_sub(WINDOW_LINES as u64);
            if leaving.is_some_and(|l| l > 0 && l >= sq.read_at) && sq.recent[0] != sq.accepted {
                self.ignored += 1;
            }
            sq.recent.rotate_left(1);
            sq.recent[WINDOW_LINES - 1] = r;
            if r == sq.accepted {
                continue;
            }
            // Only lines taken count (the window is shorter in the first lines).
            let taken = (now as usize).min(WINDOW_LINES);
            let window = &sq.recent[WINDOW_LINES - taken..];
            let first = if r.is_empty() && !sq.accepted.is_empty() {
                // A piece's square: lifted only when no line of the window read anything like
                // the piece (drop-outs come two in three lines far more often than three in a
                // row; junk on the emptied square, unlike a misread, is nothing like it).
                let gone = taken == WINDOW_LINES
                    && window
                        .iter()
                        .all(|x| x.is_empty() || !x.resembles(&sq.accepted));
                if !gone {
                    continue;
                }
                0
            } else {
                let reads = window.iter().filter(|x| **x == r).count();
                let Some(first) = window.iter().position(|x| *x == r) else {
                    continue;
                };
                let old_again = !sq.accepted.is_empty() && window[first..].contains(&sq.accepted);
                let needed = if !sq.accepted.is_empty() && r.resembles(&sq.accepted) && !known(&r) {
                    WINDOW_LINES
                } else {
                    CONFIRM_LINES as usize
                };
                if reads < needed || old_again {
                    continue;
                }
                first
            };
            sq.accepted = r;
            sq.read_at = now - (window.len() - 1 - first) as u64;
            sq.since = 0;
            changed = true;
        }
        changed
    }

    /// The line (counted from 1) in which field `i`'s accepted reading was first read: the
    /// order of the changes one line accepts (taken modulo 64).
    pub fn read_at(&self, i: usize) -> u64 {
        self.squares[i % SQUARES].read_at
    }

    /// Field `i`'s accepted reading (taken modulo 64).
    pub fn accepted(&self, i: usize) -> PieceId {
        self.squares[i % SQUARES].accepted
    }

    /// Every field's accepted reading once it has stood [`SETTLE_LINES`] lines, else `None`.
    pub fn settled(&self) -> [Option<PieceId>; SQUARES] {
        self.squares
            .map(|s| (self.lines > 0 && s.since >= SETTLE_LINES).then_some(s.accepted))
    }

    /// Lines taken.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// New readings never confirmed (junk, misreads, drop-outs).
    pub fn ignored_reads(&self) -> u64 {
        let pending: usize = self
            .squares
            .iter()
            .map(|sq| {
                (0..WINDOW_LINES)
                    .filter(|&k| {
                        let line = (self.lines + 1 + k as u64).checked_sub(WINDOW_LINES as u64);
                        line.is_some_and(|l| l > 0 && l >= sq.read_at)
                            && sq.recent[k] != sq.accepted
                    })
                    .count()
            })
            .sum();
        self.ignored + pending as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: PieceId = PieceId([3, 0, 84, 252, 153]);

    fn line(first: PieceId) -> CertaboLine {
        let mut l = CertaboLine::default();
        l.squares[0] = first;
        l
    }

    #[test]
    fn a_reading_counts_once_two_successive_lines_agree() {
        let mut f = ReadFilter::new();
        assert!(!f.update(&line(ID)));
        assert_eq!(f.accepted(0), PieceId::EMPTY);
        assert!(f.update(&line(ID)));
        assert_eq!(f.accepted(0), ID);
        // A drop-out for one line, a misread for one line, junk with three zeros: no change.
        for noise in [
            PieceId::EMPTY,
            PieceId([3, 0, 84, 252, 154]),
            PieceId([0, 0, 56, 0, 0]),
        ] {
            assert!(!f.update(&line(noise)));
            assert!(!f.update(&line(ID)));
            assert_eq!(f.accepted(0), ID);
        }
        assert_eq!(f.ignored_reads(), 3);
        // Alternating noise never flips it.
        for k in 0..6u8 {
            f.update(&line(PieceId([9, k, 9, 9, 9])));
        }
        assert_eq!(f.accepted(0), ID);
        // Lifted for two lines: empty. Junk in one line then empty: the empty reading is the
        // new candidate, accepted the line after.
        f.update(&line(PieceId::EMPTY));
        f.update(&line(PieceId([0, 0, 56, 0, 0])));
        assert_eq!(f.accepted(0), PieceId::EMPTY);
    }

    #[test]
    fn one_odd_line_between_two_reads_of_a_new_piece_does_not_put_it_off() {
        let other = PieceId([3, 0, 84, 252, 154]);
        // Put down, dropped out, read again: accepted in the third line, read in the first.
        let mut f = ReadFilter::new();
        f.update(&line(PieceId::EMPTY));
        f.update(&line(ID));
        f.update(&line(PieceId::EMPTY));
        assert!(f.update(&line(ID)));
        assert_eq!((f.accepted(0), f.read_at(0)), (ID, 2));
        // Misread between: the same.
        let mut f = ReadFilter::new();
        f.update(&line(ID));
        f.update(&line(other));
        assert!(f.update(&line(ID)));
        assert_eq!((f.accepted(0), f.read_at(0)), (ID, 1));
        // Two odd lines between: the candidate is gone.
        let mut f = ReadFilter::new();
        f.update(&line(ID));
        f.update(&line(PieceId([9, 9, 9, 9, 9])));
        f.update(&line(PieceId([8, 9, 9, 9, 9])));
        assert!(!f.update(&line(ID)));
        // A piece read again between two empty readings is still there.
        let mut f = ReadFilter::new();
        f.update(&line(ID));
        f.update(&line(ID));
        f.update(&line(PieceId::EMPTY));
        f.update(&line(ID));
        assert!(!f.update(&line(PieceId::EMPTY)));
        assert_eq!(f.accepted(0), ID);
        // Two empty lines after it are drop-outs as often as a lift: three are a lift.
        assert!(!f.update(&line(PieceId::EMPTY)));
        assert!(f.update(&line(PieceId::EMPTY)), "three empty lines: lifted");
        assert_eq!(f.read_at(0), 5);
    }

    #[test]
    fn a_reading_settles_after_it_has_stood() {
        let mut f = ReadFilter::new();
        assert_eq!(f.settled()[0], None);
        f.update(&line(ID));
        f.update(&line(ID));
        for _ in 0..SETTLE_LINES - 1 {
            f.update(&line(ID));
            assert_eq!(f.settled()[0], None);
        }
        // Noise does not unsettle it.
        f.update(&line(PieceId::EMPTY));
        assert_eq!(f.settled()[0], Some(ID));
        assert_eq!(f.settled()[1], Some(PieceId::EMPTY));
        assert_eq!(f.lines(), u64::from(SETTLE_LINES) + 2);
    }
}
