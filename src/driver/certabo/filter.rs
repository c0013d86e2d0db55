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
//! The rule here: a square keeps its accepted reading until [`CONFIRM_LINES`] successive lines
//! read the same new thing there (empty forms count as one, [`PieceId::normalized`]). Junk,
//! misreads and drop-outs that last one line are never accepted; a lifted piece and a placed
//! one are, one line (about 0.56 s) after they happen. It is stricter than a majority of three
//! (a reading that alternates with noise never flips the square) at the same delay. Matching a
//! misread id to the nearest known id would be wrong: the ids of one set share their first
//! bytes, and in set A a king and a pawn (`3 0 84 107 52` / `… 56`), a rook and a pawn, a rook
//! and a knight differ in a single byte, so a one-byte misread can name another piece.
//!
//! Errors that last two lines or more are read as changes: a square that drops out for two
//! lines is a lifted piece, a stable misread an unknown id.

use super::codec::{CertaboLine, PieceId, SQUARES};

/// Successive lines that must agree before a square's reading changes.
pub const CONFIRM_LINES: u32 = 2;
/// Lines a square's accepted reading must have stood before it counts as settled (for
/// calibration): about 3.4 s at the board's two lines a second.
pub const SETTLE_LINES: u32 = 6;

#[derive(Debug, Clone, Copy, Default)]
struct Square {
    accepted: PieceId,
    candidate: PieceId,
    /// Successive lines that read `candidate` (0: no candidate).
    seen: u32,
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
        let mut changed = false;
        for (sq, raw) in self.squares.iter_mut().zip(line.squares.iter()) {
            let r = raw.normalized();
            sq.since = sq.since.saturating_add(1);
            if r == sq.accepted {
                if sq.seen > 0 {
                    self.ignored += 1;
                }
                sq.seen = 0;
                continue;
            }
            if sq.seen > 0 && r == sq.candidate {
                sq.seen += 1;
            } else {
                if sq.seen > 0 {
                    self.ignored += 1;
                }
                sq.candidate = r;
                sq.seen = 1;
            }
            if sq.seen >= CONFIRM_LINES {
                sq.accepted = r;
                sq.seen = 0;
                sq.since = 0;
                changed = true;
            }
        }
        changed
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

    /// Readings that never reached [`CONFIRM_LINES`] (junk, misreads, drop-outs).
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
