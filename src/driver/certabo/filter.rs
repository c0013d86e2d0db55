//! Misreads, drop-outs and junk: a square's reading counts only once two successive lines
//! agree on it.
//!
//! What goes wrong on a Certabo board's readers (the samples in `tests/data/certabo/`): junk
//! ids on empty squares, different in every line (set A: 16-37 % of the empty squares of each
//! line); single bytes of an id misread (`B-h7-lifted-noise`: five ids off by one or two of
//! their last three bytes; picochess answers with a majority over the last three lines for
//! boards with "low gain" chips, Certabo's software with the most frequent reading over its
//! last three lines); a square dropping out (reading empty) for a line.
//!
//! The rule here: a square keeps its accepted reading until two lines read the same new thing
//! there (empty forms count as one, [`PieceId::normalized`]): two successive lines, or two
//! with one line between them that reads something else again (a misread or a drop-out of the
//! new piece must not put its change off to the line where the next move begins), but not the
//! old reading (except an empty one: a drop-out reads empty).
//! Junk, misreads and drop-outs that last one line are never accepted; a lifted piece and a
//! placed one are, one line (about 0.56 s) after they happen. It is close to a majority of
//! three lines at the same delay, but a reading that comes back to the accepted one in
//! between never counts. Matching a
//! misread id to the nearest known id would be wrong: the ids of one set share their first
//! bytes, and in set A a king and a pawn (`3 0 84 107 52` / `… 56`), a rook and a pawn, a rook
//! and a knight differ in a single byte, so a one-byte misread can name another piece.
//!
//! Errors that last two lines or more are read as changes: a square that drops out for two
//! lines is a lifted piece, a stable misread an unknown id.

use super::codec::{CertaboLine, PieceId, SQUARES};

/// Lines that must read a new thing before a square's reading changes (within one more line).
pub const CONFIRM_LINES: u32 = 2;
/// Lines a square's accepted reading must have stood before it counts as settled (for
/// calibration): about 3.4 s at the board's two lines a second.
pub const SETTLE_LINES: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    id: PieceId,
    /// The line it was first read in.
    first: u64,
    /// The line it was last read in.
    last: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Square {
    accepted: PieceId,
    /// The reading of the last line.
    prev: PieceId,
    /// A new reading waiting for a second line.
    candidate: Option<Candidate>,
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

    /// Takes one line; whether an accepted reading changed.
    pub fn update(&mut self, line: &CertaboLine) -> bool {
        self.lines += 1;
        let now = self.lines;
        let window = u64::from(CONFIRM_LINES);
        let mut changed = false;
        for (sq, raw) in self.squares.iter_mut().zip(line.squares.iter()) {
            let r = raw.normalized();
            sq.since = sq.since.saturating_add(1);
            let prev = std::mem::replace(&mut sq.prev, r);
            let recent = sq.candidate.filter(|c| now - c.last < window);
            if r == sq.accepted {
                // Back to the accepted reading: the candidate was noise. But an empty line
                // between two reads of a piece put down is a drop-out (a reader drops out to
                // empty; it does not read an absent piece).
                let dropout = r == PieceId::EMPTY && recent.is_some();
                if !dropout && sq.candidate.take().is_some() {
                    self.ignored += 1;
                }
                continue;
            }
            let again = sq.candidate.filter(|c| c.id == r && now - c.last <= window);
            if (now > 1 && prev == r) || again.is_some() {
                sq.accepted = r;
                sq.read_at = again.map_or(now - 1, |c| c.first);
                sq.candidate = None;
                sq.since = 0;
                changed = true;
                continue;
            }
            // A candidate of the last line stays through one other reading.
            if recent.is_none() {
                if sq.candidate.is_some() {
                    self.ignored += 1;
                }
                sq.candidate = Some(Candidate {
                    id: r,
                    first: now,
                    last: now,
                });
            }
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
        self.ignored
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
        assert!(f.update(&line(PieceId::EMPTY)), "two empty lines: lifted");
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
