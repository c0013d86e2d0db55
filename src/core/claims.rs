//! The claims helper: whether a claim of a draw by threefold repetition (FIDE 9.2) or by the
//! fifty-move rule (9.3) is correct, at a chosen ply of a game and, for a claim with a move
//! written but not made (9.2.1.1), after that intended move.
//!
//! Positions are compared with [`position_key`], the one position-equality test of eboardd
//! (9.2.2: same side to move, same pieces on the same squares, same castling rights, same en
//! passant capture possible).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use shakmaty::{
    Chess, Color, EnPassantMode, Move, Position, Role, san::San, san::SanPlus, uci::UciMove,
};

use super::game::{GameRecord, fen_of, position_key};

/// The answer of the claims helper for one position of a game.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimCheck {
    /// The ply looked at: the number of moves made (0 = the start position).
    pub ply: u32,
    /// The intended move, when the claim is made with one (9.2.1.1).
    pub intended: Option<IntendedMove>,
    /// The threefold-repetition claim (9.2).
    pub threefold: Threefold,
    /// The fifty-move claim (9.3).
    pub fifty_moves: FiftyMoves,
}

/// A move written on the scoresheet but not made (9.2.1.1), as understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntendedMove {
    /// SAN with check suffix.
    pub san: String,
    /// UCI in the game's castling mode.
    pub uci: String,
}

/// The threefold-repetition check of the position claimed about: the one at the ply looked
/// at, or the one after the intended move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Threefold {
    /// Whether the claim is correct: the position has appeared (or, with the intended move,
    /// would appear) at least three times.
    pub correct: bool,
    /// FEN of the position without the two move counters.
    pub fen: String,
    /// `"white"` or `"black"`.
    pub side_to_move: &'static str,
    /// Castling rights as in FEN (`"-"` for none).
    pub castling: String,
    /// The square of a legal en passant capture, when one is possible.
    pub en_passant: Option<String>,
    /// Every time the position stood, oldest first (the intended one last).
    pub occurrences: Vec<Occurrence>,
    /// Times the same pieces stood on the same squares with the same side to move but the
    /// castling rights or the en passant capture differed: not the same position (9.2.2).
    pub not_equal: Vec<NotEqual>,
}

/// One time a position stood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Occurrence {
    /// Moves made before it (0 = the start position).
    pub ply: u32,
    /// The number of the move to be played in it.
    pub move_number: u32,
    /// `"white"` or `"black"`.
    pub side_to_move: &'static str,
    /// The move that led to it, numbered (`"29... Rd2"`); `None` for the start position.
    pub after: Option<String>,
}

/// A position that looks the same but is not (9.2.2), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotEqual {
    /// When it stood.
    #[serde(flatten)]
    pub at: Occurrence,
    /// Its castling rights as in FEN.
    pub castling: String,
    /// Its legal en passant square, if any.
    pub en_passant: Option<String>,
}

/// The fifty-move check (9.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FiftyMoves {
    /// Moves by either player since the last capture or pawn move (after the intended move
    /// when there is one); a set-up position's own count is included.
    pub halfmoves: u32,
    /// Whether the claim is correct: at least 50 moves by each player (`halfmoves >= 100`).
    pub claimable: bool,
    /// The last capture or pawn move in the record, if any.
    pub last_irreversible: Option<PlySan>,
}

/// A move of the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlySan {
    /// Moves made once it was made (1 = the first move of the game).
    pub ply: u32,
    /// The move, numbered (`"25... Nxe5"`).
    pub san: String,
}

/// Why the helper could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    /// The ply asked for is past the moves made.
    BadPly {
        /// Asked for.
        ply: u32,
        /// Moves made.
        made: u32,
    },
    /// The intended move is not a legal move in the position.
    IllegalMove {
        /// The move as given.
        mv: String,
        /// Ply of the position it was tried in.
        ply: u32,
    },
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::BadPly { ply, made } => {
                write!(f, "ply {ply} is past the game: {made} moves made")
            }
            ClaimError::IllegalMove { mv, ply } => write!(
                f,
                "intended move {mv:?} is not a legal move in the position after ply {ply} (SAN or UCI)"
            ),
        }
    }
}

impl std::error::Error for ClaimError {}

fn color_name(c: Color) -> &'static str {
    c.fold_wb("white", "black")
}

/// FEN without the halfmove clock and the move number.
fn fen_without_clocks(pos: &Chess) -> String {
    fen_of(pos).split(' ').take(4).collect::<Vec<_>>().join(" ")
}

fn castling_of(pos: &Chess) -> String {
    fen_of(pos).split(' ').nth(2).unwrap_or("-").to_string()
}

fn ep_of(pos: &Chess) -> Option<String> {
    pos.ep_square(EnPassantMode::Legal).map(|s| s.to_string())
}

/// `"12. Nf3"` or `"12... Nf6"`: a move numbered as played from `before`.
fn numbered(before: &Chess, san: &str) -> String {
    let n = before.fullmoves().get();
    match before.turn() {
        Color::White => format!("{n}. {san}"),
        Color::Black => format!("{n}... {san}"),
    }
}

fn occurrence(pos: &Chess, ply: u32, after: Option<String>) -> Occurrence {
    Occurrence {
        ply,
        move_number: pos.fullmoves().get(),
        side_to_move: color_name(pos.turn()),
        after,
    }
}

fn parse_move(pos: &Chess, text: &str) -> Option<Move> {
    let t = text.trim();
    if let Ok(san) = San::from_str(t.trim_end_matches(['+', '#', '!', '?']))
        && let Ok(m) = san.to_move(pos)
    {
        return Some(m);
    }
    UciMove::from_str(t).ok()?.to_move(pos).ok()
}

fn is_irreversible(m: &Move) -> bool {
    m.is_capture() || m.role() == Role::Pawn
}

/// Check the threefold (9.2) and fifty-move (9.3) claims in `game` at `ply` (default: the
/// moves made so far), after `intended` (SAN or UCI) when the claim is made with a move
/// written but not made (9.2.1.1).
pub fn check_claim(
    game: &GameRecord,
    ply: Option<u32>,
    intended: Option<&str>,
) -> Result<ClaimCheck, ClaimError> {
    let made = game.ply();
    let ply = ply.unwrap_or(made);
    if ply > made {
        return Err(ClaimError::BadPly { ply, made });
    }
    let before = game.position_after(ply).clone();
    // The position claimed about: now, or after the intended move.
    let (pos, intended, extra) = match intended.filter(|s| !s.trim().is_empty()) {
        None => (before.clone(), None, None),
        Some(text) => {
            let m = parse_move(&before, text).ok_or_else(|| ClaimError::IllegalMove {
                mv: text.trim().to_string(),
                ply,
            })?;
            let mut after = before.clone();
            let san = SanPlus::from_move_and_play_unchecked(&mut after, m).to_string();
            let uci = UciMove::from_move(m, game.mode).to_string();
            let label = numbered(&before, &san);
            (after, Some((IntendedMove { san, uci }, m)), Some(label))
        }
    };
    let threefold = threefold(game, ply, &pos, extra);
    let halfmoves = pos.halfmoves();
    let last_irreversible = last_irreversible(game, ply, &before, intended.as_ref());
    Ok(ClaimCheck {
        ply,
        intended: intended.map(|(im, _)| im),
        threefold,
        fifty_moves: FiftyMoves {
            halfmoves,
            claimable: halfmoves >= 100,
            last_irreversible,
        },
    })
}

/// The threefold repetition claim about `pos` (the position after `ply`, or after the
/// intended move, labelled `extra`): where it stood before, and where only its rights differ.
fn threefold(game: &GameRecord, ply: u32, pos: &Chess, extra: Option<String>) -> Threefold {
    let key = position_key(pos);
    let after_ply = |p: u32| -> Option<String> {
        (p > 0).then(|| {
            let rec = &game.moves[(p - 1) as usize];
            numbered(game.position_after(p - 1), &rec.san)
        })
    };
    let keys = &game.position_keys()[..=ply as usize];
    let mut occurrences = Vec::new();
    let mut not_equal = Vec::new();
    for (p, &k) in keys.iter().enumerate() {
        let p = p as u32;
        let here = game.position_after(p);
        if k == key {
            occurrences.push(occurrence(here, p, after_ply(p)));
        } else if here.board() == pos.board() && here.turn() == pos.turn() {
            not_equal.push(NotEqual {
                at: occurrence(here, p, after_ply(p)),
                castling: castling_of(here),
                en_passant: ep_of(here),
            });
        }
    }
    if extra.is_some() {
        occurrences.push(occurrence(pos, ply + 1, extra));
    }
    Threefold {
        correct: occurrences.len() >= 3,
        fen: fen_without_clocks(pos),
        side_to_move: color_name(pos.turn()),
        castling: castling_of(pos),
        en_passant: ep_of(pos),
        occurrences,
        not_equal,
    }
}

/// The last capture or pawn move up to `ply` (`before`: the position after it), or the
/// intended move when it is one.
fn last_irreversible(
    game: &GameRecord,
    ply: u32,
    before: &Chess,
    intended: Option<&(IntendedMove, Move)>,
) -> Option<PlySan> {
    match intended {
        Some((im, m)) if is_irreversible(m) => Some(PlySan {
            ply: ply + 1,
            san: numbered(before, &im.san),
        }),
        _ => (1..=ply).rev().find_map(|p| {
            let rec = &game.moves[(p - 1) as usize];
            is_irreversible(&rec.mv).then(|| PlySan {
                ply: p,
                san: numbered(game.position_after(p - 1), &rec.san),
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::CastlingMode;

    /// A game from the standard start with `sans` made.
    fn game_of(sans: &str) -> GameRecord {
        let mut g = GameRecord::new(1, Chess::default(), CastlingMode::Standard, Some(518), 0);
        for tok in sans.split_whitespace() {
            if tok.ends_with('.') || tok.chars().all(|c| c.is_ascii_digit() || c == '.') {
                continue;
            }
            let m = parse_move(g.position(), tok).unwrap_or_else(|| panic!("illegal {tok}"));
            g.push(m, 0);
        }
        g
    }

    /// Kaldarova–Abrahamyan, FIDE Women's World Rapid 2024, round 1 (board 16), ½-½ by
    /// repetition (corpus: fide-womens-world-rapid-2024_rounds01-05.pgn).
    const KALDAROVA_ABRAHAMYAN: &str = "1. Nf3 Nf6 2. c4 e6 3. g3 d5 4. Bg2 Be7 5. O-O O-O \
        6. b3 c5 7. cxd5 Nxd5 8. Bb2 Nc6 9. d4 cxd4 10. Nxd4 Nxd4 11. Qxd4 Bf6 12. Qd2 Bxb2 \
        13. Qxb2 Nf6 14. Nc3 Rb8 15. Rfd1 Bd7 16. e4 Qa5 17. b4 Qh5 18. b5 Rbc8 19. Rac1 Rfd8 \
        20. h3 Be8 21. Rxd8 Rxd8 22. a4 b6 23. Ne2 Nd7 24. Nf4 Qe5 25. Qxe5 Nxe5 26. Rc7 Rd1+ \
        27. Kh2 Rd2 28. Kg1 Rd1+ 29. Kh2 Rd2 30. Kg1 Rd1+ 31. Kh2 Rd2";

    fn plies(c: &Threefold) -> Vec<u32> {
        c.occurrences.iter().map(|o| o.ply).collect()
    }

    // By hand: 27... Rd2 is ply 54 (Black's 27th move), 29... Rd2 ply 58, 31... Rd2 ply 62;
    // White's king on h2, rook d2, no castling rights, no en passant, White to move each time.
    #[test]
    fn claim_threefold_true_at_the_end_of_a_real_game() {
        let g = game_of(KALDAROVA_ABRAHAMYAN);
        assert_eq!(g.ply(), 62);
        let c = check_claim(&g, None, None).unwrap();
        assert_eq!(c.ply, 62);
        let t = &c.threefold;
        assert!(t.correct);
        assert_eq!(plies(t), vec![54, 58, 62]);
        let after: Vec<_> = t
            .occurrences
            .iter()
            .map(|o| o.after.clone().unwrap())
            .collect();
        assert_eq!(after, vec!["27... Rd2", "29... Rd2", "31... Rd2"]);
        let nums: Vec<_> = t.occurrences.iter().map(|o| o.move_number).collect();
        assert_eq!(nums, vec![28, 30, 32]);
        assert!(t.occurrences.iter().all(|o| o.side_to_move == "white"));
        assert_eq!(t.fen, "4b1k1/p1R2ppp/1p2p3/1P2n3/P3PN2/6PP/3r1PBK/8 w - -");
        assert_eq!((t.castling.as_str(), t.en_passant.clone()), ("-", None));
        assert!(t.not_equal.is_empty());
    }

    // After 29... Rd2 (ply 58) the position had stood only at plies 54 and 58: twice.
    #[test]
    fn claim_threefold_false_when_the_position_stood_twice() {
        let g = game_of(KALDAROVA_ABRAHAMYAN);
        let c = check_claim(&g, Some(58), None).unwrap();
        assert!(!c.threefold.correct);
        assert_eq!(plies(&c.threefold), vec![54, 58]);
    }

    // After 30. Kg1 (ply 59) Black writes 30... Rd1+ and claims (9.2.1.1): the position after
    // it stood after 26... Rd1+ (ply 52) and 28... Rd1+ (ply 56); with the intended move it is
    // the third time. Without the move the position after 30. Kg1 stood twice (55, 59).
    #[test]
    fn claim_threefold_correct_only_with_the_intended_move() {
        let g = game_of(KALDAROVA_ABRAHAMYAN);
        let now = check_claim(&g, Some(59), None).unwrap();
        assert!(!now.threefold.correct);
        assert_eq!(plies(&now.threefold), vec![55, 59]);
        for written in ["Rd1+", "Rd1", "d2d1"] {
            let c = check_claim(&g, Some(59), Some(written)).unwrap();
            assert!(c.threefold.correct, "{written}");
            assert_eq!(plies(&c.threefold), vec![52, 56, 60]);
            let im = c.intended.unwrap();
            assert_eq!((im.san.as_str(), im.uci.as_str()), ("Rd1+", "d2d1"));
            assert_eq!(
                c.threefold.occurrences[2].after.as_deref(),
                Some("30... Rd1+")
            );
        }
        // Another written move makes a new position: the claim is false.
        let other = check_claim(&g, Some(59), Some("Kf8")).unwrap();
        assert!(!other.threefold.correct);
        assert_eq!(plies(&other.threefold), vec![60]);
    }

    #[test]
    fn claim_illegal_intended_move_and_bad_ply_are_errors() {
        let g = game_of(KALDAROVA_ABRAHAMYAN);
        let e = check_claim(&g, Some(59), Some("Qd1")).unwrap_err();
        assert_eq!(
            e,
            ClaimError::IllegalMove {
                mv: "Qd1".into(),
                ply: 59
            }
        );
        assert!(e.to_string().contains("\"Qd1\""));
        assert_eq!(
            check_claim(&g, Some(63), None).unwrap_err(),
            ClaimError::BadPly { ply: 63, made: 62 }
        );
    }

    // The "double Bongcloud" played online by Carlsen and Nakamura in 2021. After 1... e5
    // (ply 2) and after 3... Ke8 (ply 6) the same pieces stand on the same squares with White
    // to move, but at ply 2 both sides may still castle (KQkq) and at ply 6 neither may: not the
    // same position (9.2.2). After 6... Ke7 (ply 12) the position after 2... Ke7 stood the third
    // time (plies 4, 8, 12).
    #[test]
    fn claim_castling_rights_make_positions_differ() {
        let g = game_of("1. e4 e5 2. Ke2 Ke7 3. Ke1 Ke8 4. Ke2 Ke7 5. Ke1 Ke8 6. Ke2 Ke7");
        let c = check_claim(&g, Some(10), None).unwrap();
        assert_eq!(plies(&c.threefold), vec![6, 10]);
        assert!(!c.threefold.correct);
        assert_eq!(c.threefold.castling, "-");
        assert_eq!(c.threefold.not_equal.len(), 1);
        assert_eq!(c.threefold.not_equal[0].at.ply, 2);
        assert_eq!(c.threefold.not_equal[0].castling, "KQkq");
        let end = check_claim(&g, None, None).unwrap();
        assert!(end.threefold.correct);
        assert_eq!(plies(&end.threefold), vec![4, 8, 12]);
    }

    // Constructed from the Alekhine Defence: after 2... d5 (ply 4) White may take en passant
    // (exd6), so that position differs from the same placement after 4... Nb8 (ply 8) and
    // 6... Nb8 (ply 12), where the capture is no longer possible (9.2.2, en passant). At ply 12
    // the position stood twice only: no threefold. After 8... Nb8 (ply 16), three times.
    #[test]
    fn claim_en_passant_makes_positions_differ() {
        let g = game_of(
            "1. e4 Nf6 2. e5 d5 3. Nf3 Nc6 4. Ng1 Nb8 5. Nf3 Nc6 6. Ng1 Nb8 7. Nf3 Nc6 8. Ng1 Nb8",
        );
        let c = check_claim(&g, Some(12), None).unwrap();
        assert!(!c.threefold.correct);
        assert_eq!(plies(&c.threefold), vec![8, 12]);
        assert_eq!(c.threefold.en_passant, None);
        assert_eq!(c.threefold.not_equal.len(), 1);
        assert_eq!(c.threefold.not_equal[0].at.ply, 4);
        assert_eq!(c.threefold.not_equal[0].en_passant.as_deref(), Some("d6"));
        let end = check_claim(&g, None, None).unwrap();
        assert!(end.threefold.correct);
        assert_eq!(plies(&end.threefold), vec![8, 12, 16]);
    }

    // The helper and the automatic check behind `claim_available` (`GameRecord::repetitions`)
    // count the same: at every ply of the real game, as the game was played.
    #[test]
    fn claim_agrees_with_the_automatic_repetition_count() {
        let full = game_of(KALDAROVA_ABRAHAMYAN);
        let mut g = GameRecord::new(1, Chess::default(), CastlingMode::Standard, Some(518), 0);
        for rec in &full.moves {
            g.push(rec.mv, 0);
            let c = check_claim(&full, Some(g.ply()), None).unwrap();
            assert_eq!(
                c.threefold.occurrences.len(),
                g.repetitions(),
                "ply {}",
                g.ply()
            );
            assert_eq!(c.fifty_moves.halfmoves, g.position().halfmoves());
        }
    }

    // In the real game the last capture was 25... Nxe5 (ply 50); at the end (ply 62) that is
    // 12 moves by both players together: no fifty-move claim.
    #[test]
    fn claim_fifty_moves_counts_from_the_last_capture_in_a_real_game() {
        let g = game_of(KALDAROVA_ABRAHAMYAN);
        let f = check_claim(&g, None, None).unwrap().fifty_moves;
        assert_eq!(f.halfmoves, 12);
        assert!(!f.claimable);
        assert_eq!(
            f.last_irreversible,
            Some(PlySan {
                ply: 50,
                san: "25... Nxe5".into()
            })
        );
    }

    // Constructed: from the start both players move only knights, Nf3 Nf6 Ng1 Ng8 25 times
    // over (100 moves, 50 by each player, no pawn move, no capture). After ply 99 (50. Ng1)
    // it is 49 moves by Black: not yet; Black writing 50... Ng8 makes the claim correct (9.3
    // with 9.2.1.1's written move); at ply 100 it is correct; a pawn move resets the count.
    #[test]
    fn claim_fifty_moves_with_and_without_the_intended_move() {
        let g = game_of(&"Nf3 Nf6 Ng1 Ng8 ".repeat(25));
        assert_eq!(g.ply(), 100);
        let at99 = check_claim(&g, Some(99), None).unwrap().fifty_moves;
        assert_eq!((at99.halfmoves, at99.claimable), (99, false));
        assert_eq!(at99.last_irreversible, None);
        let with = check_claim(&g, Some(99), Some("Ng8")).unwrap().fifty_moves;
        assert_eq!((with.halfmoves, with.claimable), (100, true));
        let end = check_claim(&g, None, None).unwrap().fifty_moves;
        assert_eq!((end.halfmoves, end.claimable), (100, true));
        let pawn = check_claim(&g, Some(99), Some("e5")).unwrap().fifty_moves;
        assert_eq!((pawn.halfmoves, pawn.claimable), (0, false));
        assert_eq!(
            pawn.last_irreversible,
            Some(PlySan {
                ply: 100,
                san: "50... e5".into()
            })
        );
    }
}
