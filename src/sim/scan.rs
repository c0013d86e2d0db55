//! How a DGT board turns what happens on it into FIELD_UPDATE reports (`docs/dgt-protocol.md` §1.5).
//!
//! The board scans all squares every 200–250 ms (jittered) and reports each square whose reading
//! differs from what it last reported, in no fixed order within the scan. So a piece lifted and
//! put back within one scan is never reported, a capture whose victim is lifted and capturer
//! placed within one scan shows as the square changing straight from one piece to the other, a
//! slide shows some of the squares passed over, and a one-scan sensor glitch shows as the square
//! reading empty, then the piece again one scan later.

use shakmaty::{Board, Square};

use super::rng::Rng;
use crate::core::observation::{Micros, SquareReading};

/// One physical change on the board: from `t` on, `square` holds `reading`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhysEvent {
    /// When it happens (microseconds since the capture started).
    pub t: Micros,
    /// The square.
    pub square: Square,
    /// What is on it from then on.
    pub reading: SquareReading,
}

/// A one-scan sensor glitch: the first scan at or after `t` reads `square` empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glitch {
    /// Earliest time of the faulty scan.
    pub t: Micros,
    /// The square misread as empty.
    pub square: Square,
}

/// One FIELD_UPDATE the board sends: at `t`, `square` reads `reading`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldReport {
    /// When the board sends it.
    pub t: Micros,
    /// The square (in board coordinates; the caller maps it to a DGT field index).
    pub square: Square,
    /// The new reading.
    pub reading: SquareReading,
}

/// Timing of the scanning board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanTiming {
    /// Shortest time between two scans, in microseconds.
    pub period_min: Micros,
    /// Longest time between two scans, in microseconds.
    pub period_max: Micros,
    /// Time between two reports of the same scan, in microseconds.
    pub report_gap: Micros,
}

impl Default for ScanTiming {
    /// 200–250 ms per scan, reports of a scan 5 ms apart.
    fn default() -> Self {
        ScanTiming {
            period_min: 200_000,
            period_max: 250_000,
            report_gap: 5_000,
        }
    }
}

/// The 64 readings of a board, indexed by [`Square`].
pub fn readings(board: &Board) -> [SquareReading; 64] {
    let mut out = [SquareReading::Empty; 64];
    for (sq, piece) in board.iter() {
        out[usize::from(sq)] = SquareReading::Piece(piece);
    }
    out
}

/// Runs the scanning board from `start` until every event and glitch has been seen and
/// reported (and at least until `end`). `events` and `glitches` must be sorted by time.
pub fn scan(
    initial: &Board,
    events: &[PhysEvent],
    glitches: &[Glitch],
    start: Micros,
    end: Micros,
    timing: ScanTiming,
    rng: &mut Rng,
) -> Vec<FieldReport> {
    let mut phys = readings(initial);
    let mut reported = phys;
    let mut out = Vec::new();
    let (mut ei, mut gi) = (0, 0);
    let mut t = start + rng.range(0, timing.period_max);
    loop {
        while let Some(e) = events.get(ei).filter(|e| e.t <= t) {
            phys[usize::from(e.square)] = e.reading;
            ei += 1;
        }
        let mut snapshot = phys;
        while let Some(g) = glitches.get(gi).filter(|g| g.t <= t) {
            let i = usize::from(g.square);
            // A glitch only shows on a stable, occupied square.
            if phys[i] != SquareReading::Empty && reported[i] == phys[i] {
                snapshot[i] = SquareReading::Empty;
            }
            gi += 1;
        }
        let mut changed: Vec<usize> = (0..64).filter(|&i| snapshot[i] != reported[i]).collect();
        rng.shuffle(&mut changed);
        for (j, &i) in changed.iter().enumerate() {
            reported[i] = snapshot[i];
            out.push(FieldReport {
                t: t + j as Micros * timing.report_gap,
                square: Square::new(i as u32),
                reading: snapshot[i],
            });
        }
        if ei >= events.len() && gi >= glitches.len() && reported == phys && t >= end {
            return out;
        }
        t += rng.range(timing.period_min, timing.period_max);
    }
}

/// The "clean" board: every physical change is reported at once, in order. A glitch reads
/// empty at its time and the piece again `glitch_len` later.
pub fn immediate(
    initial: &Board,
    events: &[PhysEvent],
    glitches: &[Glitch],
    glitch_len: Micros,
) -> Vec<FieldReport> {
    let mut out: Vec<FieldReport> = events
        .iter()
        .map(|e| FieldReport {
            t: e.t,
            square: e.square,
            reading: e.reading,
        })
        .collect();
    let mut phys = readings(initial);
    let mut ei = 0;
    for g in glitches {
        while let Some(e) = events.get(ei).filter(|e| e.t <= g.t) {
            phys[usize::from(e.square)] = e.reading;
            ei += 1;
        }
        let reading = phys[usize::from(g.square)];
        let busy = events
            .iter()
            .any(|e| e.square == g.square && (g.t..=g.t + glitch_len).contains(&e.t));
        if reading != SquareReading::Empty && !busy {
            out.push(FieldReport {
                t: g.t,
                square: g.square,
                reading: SquareReading::Empty,
            });
            out.push(FieldReport {
                t: g.t + glitch_len,
                square: g.square,
                reading,
            });
        }
    }
    out.sort_by_key(|r| r.t);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Color, Piece, Role};

    #[test]
    fn quick_replacement_is_one_report() {
        let board = Board::default();
        let pawn = SquareReading::Piece(Piece {
            color: Color::Black,
            role: Role::Pawn,
        });
        let ev = |t, square, reading| PhysEvent { t, square, reading };
        // d7 lifted and put back within 50 ms: never seen; e2 to e4 seen.
        let events = [
            ev(1_000_000, Square::D7, SquareReading::Empty),
            ev(1_050_000, Square::D7, pawn),
            ev(2_000_000, Square::E2, SquareReading::Empty),
            ev(
                2_600_000,
                Square::E4,
                SquareReading::Piece(Piece {
                    color: Color::White,
                    role: Role::Pawn,
                }),
            ),
        ];
        let mut hits = 0;
        for seed in 0..50 {
            let r = scan(
                &board,
                &events,
                &[],
                0,
                0,
                ScanTiming::default(),
                &mut Rng::new(seed),
            );
            assert!(r.iter().all(|f| f.square != Square::D7) || r.len() == 4);
            hits += usize::from(r.iter().all(|f| f.square != Square::D7));
            assert_eq!(r.iter().filter(|f| f.square == Square::E4).count(), 1);
        }
        assert!(hits > 30);
    }
}
