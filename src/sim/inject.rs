//! Irregularities injected into simulated games, with their truth (issue 3, "How it is judged").
//!
//! [`inject`] plays a [`ScriptGame`] like [`super::synthesize_game`] (the same timeline, hand
//! orders, slides, glitches, scanning board and clock) and weaves a few irregularities into it,
//! following the conventions of the sample captures in `tests/data/captures/irregular*/`:
//!
//! - **touch-move** (4.3a/b): before moving, the player lifts one of their own pieces that has a
//!   legal move, or an opponent's piece that could be captured, holds it 0.8–2.5 s and puts it
//!   back at least 0.5 s before another piece moves;
//! - **rook-first castling** (4.4b): the castling rook is lifted and placed before the king;
//! - **promotion piece changed** (4.4d): a first promotion piece is released on the promotion
//!   square for 0.8–2.5 s, then exchanged for the piece of the game;
//! - **move changed after release** (4.6): the piece is released on another legal square for
//!   1.5–3 s, then moved on to the square of the game;
//! - **illegal move** (7.5.1): a piece put on a square it cannot legally reach, completed by a
//!   press; the arbiter pauses the clock, restores the position, sets the lever back and restarts
//!   the clock; then the player makes the game's move;
//! - **pawn not promoted** (7.5.2): the pawn is left on the last rank and the clock pressed; in the
//!   opponent's time it is replaced by a queen;
//! - **clock pressed without a move** (7.8.1): the player presses without moving; the arbiter
//!   pauses, sets the lever back and restarts the clock;
//! - **displaced pieces** (7.4): a piece knocked to a neighbouring square while the move is
//!   made, or the moving piece first put on a square next to its target, for 1.5–4 s, then put
//!   right.
//!
//! The truth ([`Injected`]) is the SAN list the replay must print (the game's moves: injections
//! never change the move record) and a list of `(code, ply)` pairs (ply = the ply of the turn
//! in which it happened, 0 for `board_reversed`): the injections and what the handling itself
//! contains (rook-first castling chosen by the hand-order model, a reversed board). What the
//! handling contains but the sensors cannot show for certain (a rook and a king lifted within
//! one scan, a piece lifted and put back about as fast as sensor noise) is listed apart, as
//! tolerated. Injections are placed so that the board never shows something the Laws would
//! read otherwise: a knocked or misplaced piece never lands where a legal move could put it or
//! pass over, no king is displaced, no illegal move is a partial legal one, a changed move or
//! promotion piece never ends the game, and at most one illegal move (7.5, 7.8.1) is injected
//! per player and game.
//!
//! Without injections (`count: 0`) the capture is byte for byte the one of
//! [`super::synthesize_game`] with the same [`SimConfig`].

use shakmaty::san::SanPlus;
use shakmaty::{Bitboard, Board, Chess, Color, Move, Piece, Position, Role, Square, attacks};

use super::clock::{ClockConfig, Dgt3000};
use super::hand::{self, HandAction, normal_move};
use super::pgn::ScriptGame;
use super::rng::Rng;
use super::scan::{self, Glitch, PhysEvent, ScanTiming};
use super::timeline::{self, PlyTrace};
use super::{SimConfig, Style, field_index};
use crate::capture::Record;
use crate::core::observation::{ClockReading, Micros, SquareReading};
use crate::driver::dgt::DgtMessage;

const MS: Micros = 1000;
const SEC: Micros = 1_000_000;

/// A kind of injected irregularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Own piece with a legal move lifted and put back, another piece moved (4.3a).
    TouchedPieceNotMoved,
    /// Opponent's capturable piece lifted and put back, not captured (4.3b).
    TouchedOpponentNotCaptured,
    /// Castling with the rook lifted before the king (4.4b).
    CastlingRookTouchedFirst,
    /// Another promotion piece released on the promotion square first (4.4d).
    PromotionPieceChanged,
    /// The piece released on another legal square first, then moved on (4.6).
    MoveChangedAfterRelease,
    /// A non-legal relocation completed by a press, restored by the arbiter (7.5.1).
    IllegalMove,
    /// Pawn left on the last rank with the clock pressed, replaced by a queen later (7.5.2).
    PawnNotPromoted,
    /// Clock pressed without a move, set back by the arbiter (7.8.1).
    ClockPressedWithoutMove,
    /// A piece knocked to a neighbouring square during the move and put right (7.4).
    KnockedPiece,
    /// The moving piece first put on a square next to its target, then on the target (7.4).
    MovedPieceOffTarget,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 10] = [
        Kind::TouchedPieceNotMoved,
        Kind::TouchedOpponentNotCaptured,
        Kind::CastlingRookTouchedFirst,
        Kind::PromotionPieceChanged,
        Kind::MoveChangedAfterRelease,
        Kind::IllegalMove,
        Kind::PawnNotPromoted,
        Kind::ClockPressedWithoutMove,
        Kind::KnockedPiece,
        Kind::MovedPieceOffTarget,
    ];

    /// The irregularity code the daemon must raise (`docs/events.md`).
    pub fn code(self) -> &'static str {
        match self {
            Kind::TouchedPieceNotMoved => "touched_piece_not_moved",
            Kind::TouchedOpponentNotCaptured => "touched_opponent_not_captured",
            Kind::CastlingRookTouchedFirst => "castling_rook_touched_first",
            Kind::PromotionPieceChanged => "promotion_piece_changed",
            Kind::MoveChangedAfterRelease => "move_changed_after_release",
            Kind::IllegalMove => "illegal_move",
            Kind::PawnNotPromoted => "pawn_not_promoted",
            Kind::ClockPressedWithoutMove => "clock_pressed_without_move",
            Kind::KnockedPiece | Kind::MovedPieceOffTarget => "displaced_pieces",
        }
    }

    /// Whether the Laws count it as an illegal move (7.5, 7.8.1): at most one per player and
    /// game is injected, so that no game is lost by a second one (7.5.3).
    fn is_illegal_move(self) -> bool {
        matches!(
            self,
            Kind::IllegalMove | Kind::PawnNotPromoted | Kind::ClockPressedWithoutMove
        )
    }

    /// Kinds that only fit a few plies (castling, promotions): chosen first.
    fn is_rare(self) -> bool {
        matches!(
            self,
            Kind::CastlingRookTouchedFirst | Kind::PromotionPieceChanged | Kind::PawnNotPromoted
        )
    }
}

/// What to inject into one game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectConfig {
    /// How the game is played and reported (style, seed, board orientation, clock, …).
    pub sim: SimConfig,
    /// How many irregularities to inject (fewer when the game has too few plies that fit;
    /// injected plies are at least two plies apart).
    pub count: usize,
    /// The kinds to choose from.
    pub kinds: Vec<Kind>,
    /// Exactly these `(kind, ply)` instead of a random choice (ply from 1); those that do not
    /// fit the game are left out (see [`Injected::injections`]).
    pub plan: Option<Vec<(Kind, usize)>>,
}

impl InjectConfig {
    /// Human style with `seed`, six irregularities of every kind.
    pub fn new(seed: u64) -> InjectConfig {
        InjectConfig {
            sim: SimConfig::human(seed),
            count: 6,
            kinds: Kind::ALL.to_vec(),
            plan: None,
        }
    }

    /// Exactly the irregularities of `plan` (`(kind, ply)`, ply from 1), human style.
    pub fn planned(seed: u64, plan: &[(Kind, usize)]) -> InjectConfig {
        InjectConfig {
            plan: Some(plan.to_vec()),
            ..InjectConfig::new(seed)
        }
    }
}

/// One injected irregularity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// What was injected.
    pub kind: Kind,
    /// The ply of the turn in which it happened (from 1).
    pub ply: u32,
    /// The squares involved (touched, relocated, knocked…), for messages.
    pub squares: Vec<Square>,
}

impl Injection {
    /// `kind ply squares`, for messages.
    pub fn describe(&self) -> String {
        let squares: Vec<String> = self.squares.iter().map(|s| s.to_string()).collect();
        format!("{:?}@{} [{}]", self.kind, self.ply, squares.join(" "))
    }
}

/// A synthesised capture with injected irregularities and its truth.
#[derive(Debug, Clone)]
pub struct Injected {
    /// The capture records, in time order.
    pub records: Vec<Record>,
    /// Per ply: hand order, times (after the injections).
    pub plies: Vec<PlyTrace>,
    /// Whether White's clock face was the right one.
    pub white_on_right: bool,
    /// The moves the replay must print, in SAN (with `+` / `#`).
    pub sans: Vec<String>,
    /// The irregularities injected, in ply order.
    pub injections: Vec<Injection>,
    /// Every `(code, ply)` the daemon must raise: the injections and what the handling contains
    /// (rook-first castling that the board shows for certain, `board_reversed` at ply 0),
    /// sorted.
    pub truth: Vec<(&'static str, u32)>,
    /// What the handling contains but the sensors may not show (rook-first castling with both
    /// lifts within one scan, or with the king lifted and put back about as fast as noise):
    /// the daemon may raise these or not.
    pub tolerated: Vec<(&'static str, u32)>,
}

/// A put-back sooner than this is sensor noise to the daemon (`docs/fide-laws.md` §3: 300 ms).
const NOISE: Micros = 300 * MS;
/// How long a put-back must be to count as a touch for certain on a scanning board: the noise
/// limit plus one scan period of quantisation.
const SURE_TOUCH: Micros = 550 * MS;
/// Below this a put-back can never look like a touch.
const SURE_NOISE: Micros = 50 * MS;
/// Two lifts this far apart are reported in different scans (a scan period is at most 250 ms).
const SURE_ORDER: Micros = 250 * MS;

/// What the handling of one castling contains, as the sensors can show it: `Some(true)` when
/// the rook was lifted before the king and the board shows it for certain, `Some(false)` when
/// it was but the sensors may not show it (both lifts within one scan, or a piece lifted and
/// put back on its square about as fast as sensor noise), `None` when it was not.
fn rook_first_verdict(events: &[PhysEvent], p: &PlyTrace, style: Style) -> Option<bool> {
    let Move::Castle { king, rook } = p.mv else {
        return None;
    };
    if !is_rook_first(&p.mv, &p.order) {
        return None;
    }
    let ply: Vec<&PhysEvent> = events
        .iter()
        .filter(|e| (p.first_action..=p.last_action).contains(&e.t))
        .collect();
    let lifted = |sq: Square| {
        ply.iter()
            .find(|e| e.square == sq && e.reading == SquareReading::Empty)
            .map(|e| e.t)
    };
    let (Some(tr), Some(tk)) = (lifted(rook), lifted(king)) else {
        return None;
    };
    let clean = style == Style::Clean;
    let mut sure = clean || tk - tr >= SURE_ORDER;
    let (touch, noise) = if clean {
        (NOISE, NOISE)
    } else {
        (SURE_TOUCH, SURE_NOISE)
    };
    for (sq, since, role) in [(king, tk, Role::King), (rook, tr, Role::Rook)] {
        // A piece whose castling square is its own square is lifted and put back.
        let put_back = p.order.iter().find_map(|a| match *a {
            HandAction::Place(s, piece) if s == sq && piece.role == role => Some(piece),
            _ => None,
        });
        let Some(piece) = put_back else {
            continue;
        };
        let held = ply
            .iter()
            .find(|e| e.square == sq && e.t > since && e.reading == SquareReading::Piece(piece))
            .map_or(Micros::MAX, |e| e.t - since);
        if held < noise {
            // Sensor noise to the daemon: this piece was not touched.
            return None;
        }
        if held < touch {
            sure = false;
        }
    }
    Some(sure)
}

/// A castling order that lifts the rook before the king (and lifts the king).
fn is_rook_first(m: &Move, order: &[HandAction]) -> bool {
    let Move::Castle { king, rook } = *m else {
        return false;
    };
    order.first() == Some(&HandAction::Lift(rook)) && order.contains(&HandAction::Lift(king))
}

/// The SAN (with check and mate suffixes) of every move of `game`.
pub fn sans_of(start: &Chess, moves: &[Move]) -> Vec<String> {
    let mut pos = start.clone();
    moves
        .iter()
        .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The physical world being edited

/// What the clock is made to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClockOp {
    /// Started with this colour to move.
    Start(Color),
    /// The running side's lever pressed.
    Press,
    /// Paused by the arbiter.
    Pause,
    /// Lever set to the other side while paused.
    Flip,
    /// Restarted by the arbiter.
    Resume,
}

/// The physical game: every board change, glitch and clock action, with times. Injections
/// insert episodes and shift everything after them.
struct World {
    events: Vec<PhysEvent>,
    glitches: Vec<Glitch>,
    clock: Vec<(Micros, ClockOp)>,
    plies: Vec<PlyTrace>,
    clock_start: Micros,
    end: Micros,
}

impl World {
    /// Shifts everything at or after `t0` by `d`.
    fn shift_from(&mut self, t0: Micros, d: Micros) {
        let f = |t: &mut Micros| {
            if *t >= t0 {
                *t += d;
            }
        };
        self.events.iter_mut().for_each(|e| f(&mut e.t));
        self.glitches.iter_mut().for_each(|g| f(&mut g.t));
        self.clock.iter_mut().for_each(|(t, _)| f(t));
        for p in &mut self.plies {
            f(&mut p.first_action);
            f(&mut p.last_action);
            if let Some(press) = p.press.as_mut() {
                f(press);
            }
        }
        f(&mut self.end);
    }

    fn add(&mut self, t: Micros, action: HandAction) {
        let (square, reading) = match action {
            HandAction::Lift(sq) => (sq, SquareReading::Empty),
            HandAction::Place(sq, p) => (sq, SquareReading::Piece(p)),
        };
        self.events.push(PhysEvent { t, square, reading });
    }

    /// A piece lifted from `from`, set down on `to`, lifted again and put back on `from`, at
    /// the four times `t`.
    fn there_and_back(&mut self, from: Square, to: Square, piece: Piece, t: [Micros; 4]) {
        self.add(t[0], HandAction::Lift(from));
        self.add(t[1], HandAction::Place(to, piece));
        self.add(t[2], HandAction::Lift(to));
        self.add(t[3], HandAction::Place(from, piece));
    }

    /// A press the arbiter undoes: pressed, paused and flipped back at the three times given,
    /// resumed a moment after; the game goes on (from `first`) a while after the resume.
    fn press_undone(&mut self, rng: &mut Rng, first: Micros, [press, pause, flip]: [Micros; 3]) {
        let resume = flip + ms(rng, 500, 1500);
        let start = resume + ms(rng, 1000, 4000);
        self.shift_from(first, start - first);
        self.clock.extend([
            (press, ClockOp::Press),
            (pause, ClockOp::Pause),
            (flip, ClockOp::Flip),
            (resume, ClockOp::Resume),
        ]);
    }

    /// The press before ply index `i` (or the clock start).
    fn prev_press(&self, i: usize) -> Micros {
        match i {
            0 => self.clock_start,
            _ => self.plies[i - 1]
                .press
                .unwrap_or(self.plies[i - 1].last_action),
        }
    }

    /// Replaces the hand actions of ply index `i` by `actions` (gap before each; the first
    /// starts at the ply's first action), keeping the press delay.
    fn rebuild(&mut self, i: usize, actions: &[(Micros, HandAction)]) {
        let (first, last) = (self.plies[i].first_action, self.plies[i].last_action);
        self.events.retain(|e| !(first..=last).contains(&e.t));
        let mut t = first;
        let mut times = Vec::new();
        for (j, &(gap, _)) in actions.iter().enumerate() {
            if j > 0 {
                t += gap;
            }
            times.push(t);
        }
        let new_last = t;
        self.shift_from(last + 1, new_last - last);
        for (&t, &(_, a)) in times.iter().zip(actions) {
            self.add(t, a);
        }
        let p = &mut self.plies[i];
        p.last_action = new_last;
        p.order = actions.iter().map(|&(_, a)| a).collect();
        p.slid_over.clear();
    }
}

fn ms(rng: &mut Rng, lo: i64, hi: i64) -> Micros {
    rng.range(lo * MS, hi * MS)
}

/// Gap between two hand actions of one move.
fn hand_gap(style: Style, rng: &mut Rng) -> Micros {
    match style {
        Style::Clean => ms(rng, 200, 1000),
        Style::Human => ms(rng, 150, 900),
        Style::Blitz => ms(rng, 80, 400),
    }
}

// ---------------------------------------------------------------------------------------------
// Chess helpers (independent of the daemon's own judgement)

/// Every square a move changes: origin, destination, en passant victim, castling squares.
fn move_squares(m: &Move, us: Color) -> Bitboard {
    match *m {
        Move::Normal { from, to, .. } => Bitboard::from(from) | to,
        Move::EnPassant { from, to } => {
            Bitboard::from(from) | to | Square::from_coords(to.file(), from.rank())
        }
        Move::Castle { king, rook } => {
            let side = m.castling_side().expect("castling");
            Bitboard::from(king) | rook | side.king_to(us) | side.rook_to(us)
        }
        Move::Put { to, .. } => Bitboard::from(to),
    }
}

/// The squares a move's pieces pass over on their way.
fn move_path(m: &Move, us: Color) -> Bitboard {
    match *m {
        Move::Normal { from, to, .. } | Move::EnPassant { from, to } => attacks::between(from, to),
        Move::Castle { king, rook } => {
            let side = m.castling_side().expect("castling");
            attacks::between(king, side.king_to(us)) | attacks::between(rook, side.rook_to(us))
        }
        Move::Put { .. } => Bitboard::EMPTY,
    }
}

/// Every square a legal move of the piece on `s` may show it on or pass over (destinations,
/// squares between for any piece, every square of a castling it takes part in).
fn legal_reach(pos: &Chess, s: Square) -> Bitboard {
    let mut reach = Bitboard::EMPTY;
    for m in pos.legal_moves() {
        match m {
            Move::Normal { from, to, .. } | Move::EnPassant { from, to } if from == s => {
                reach |= attacks::between(from, to) | to;
            }
            Move::Castle { king, rook } if king == s || rook == s => {
                let side = m.castling_side().expect("castling");
                let (kt, rt) = (side.king_to(pos.turn()), side.rook_to(pos.turn()));
                reach |= Bitboard::from(king) | rook | kt | rt;
                reach |= attacks::between(king, kt) | attacks::between(rook, rt);
            }
            _ => {}
        }
    }
    reach
}

/// Whether the piece on `s` has a legal move (a castling rook or king counts).
fn can_move(pos: &Chess, s: Square) -> bool {
    pos.legal_moves().iter().any(|m| match *m {
        Move::Castle { king, rook } => king == s || rook == s,
        _ => m.from() == Some(s),
    })
}

/// Whether a legal move captures the piece on `s`.
fn capturable(pos: &Chess, s: Square) -> bool {
    pos.legal_moves()
        .iter()
        .any(|m| captured_square(m) == Some(s))
}

/// The square of the piece a move captures.
fn captured_square(m: &Move) -> Option<Square> {
    match *m {
        Move::Normal {
            capture: Some(_),
            to,
            ..
        } => Some(to),
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        _ => None,
    }
}

/// Both kings on the centre squares (the DGT result signal).
fn kings_in_centre(board: &Board) -> bool {
    let centre = Bitboard::from(Square::D4) | Square::E4 | Square::D5 | Square::E5;
    (board.kings() & centre).count() == 2
}

/// Every pawn on its home rank: the board might read as a start position.
fn looks_like_a_start(board: &Board) -> bool {
    board.pawns().count() == 16
        && (board.pawns() & board.white()) == Bitboard::from(shakmaty::Rank::Second)
        && (board.pawns() & board.black()) == Bitboard::from(shakmaty::Rank::Seventh)
}

/// `board` with the piece on `from` moved to the empty square `to`.
fn relocated(board: &Board, from: Square, to: Square) -> Board {
    let mut b = board.clone();
    let p = b.remove_piece_at(from).expect("a piece to relocate");
    b.set_piece_at(to, p);
    b
}

fn ends_game(pos: &Chess) -> bool {
    pos.is_game_over()
}

/// A touch of one of `squares` that passes `ok`, chosen at random.
fn touch_one(
    board: &Board,
    squares: Bitboard,
    ok: impl Fn(Square) -> bool,
    rng: &mut Rng,
) -> Option<Spec> {
    let candidates: Vec<Square> = squares.into_iter().filter(|&s| ok(s)).collect();
    let square = choose(&candidates, rng)?;
    Some(Spec::Touch {
        square,
        piece: board.piece_at(square)?,
    })
}

fn choose<T: Copy>(items: &[T], rng: &mut Rng) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.below(items.len() as u64) as usize])
}

// ---------------------------------------------------------------------------------------------
// What to inject where

/// A fitting injection with its choices made.
#[derive(Debug, Clone)]
enum Spec {
    Touch { square: Square, piece: Piece },
    RookFirst { order: Vec<HandAction> },
    PromotionChanged { wrong: Role },
    MoveChanged { via: Square },
    Illegal { from: Square, to: Square },
    PawnNotPromoted,
    PressWithoutMove,
    Knock { from: Square, to: Square },
    OffTarget { via: Square },
}

impl Spec {
    fn squares(&self, m: &Move) -> Vec<Square> {
        match *self {
            Spec::Touch { square, .. } => vec![square],
            Spec::RookFirst { .. } | Spec::PressWithoutMove => Vec::new(),
            Spec::PromotionChanged { .. } | Spec::PawnNotPromoted => vec![m.to()],
            Spec::MoveChanged { via } | Spec::OffTarget { via } => vec![via, m.to()],
            Spec::Illegal { from, to } | Spec::Knock { from, to } => vec![from, to],
        }
    }
}

/// [`normal_move`] of a move that promotes nothing.
fn unpromoted(m: &Move) -> Option<(Role, Square, Option<Role>, Square)> {
    normal_move(m).filter(|_| m.promotion().is_none())
}

/// Whether `kind` fits ply index `i` (move `m` from `pos`), with the random choices made.
fn fit(kind: Kind, pos: &Chess, m: &Move, trace: &PlyTrace, rng: &mut Rng) -> Option<Spec> {
    let us = pos.turn();
    let board = pos.board();
    let touched = move_squares(m, us);
    let after = {
        let mut a = pos.clone();
        a.play_unchecked(*m);
        a
    };
    match kind {
        Kind::TouchedPieceNotMoved => {
            let own = board.by_color(us) & !touched;
            touch_one(board, own, |s| can_move(pos, s), rng)
        }
        Kind::TouchedOpponentNotCaptured => {
            let theirs = board.by_color(!us) & !touched;
            let victim = captured_square(m);
            touch_one(
                board,
                theirs,
                |s| capturable(pos, s) && victim != Some(s),
                rng,
            )
        }
        Kind::CastlingRookTouchedFirst => {
            if !m.is_castle() {
                return None;
            }
            let orders: Vec<Vec<HandAction>> = hand::orders(pos, m)
                .into_iter()
                .filter(|o| is_rook_first(m, o))
                .collect();
            let i = choose(&(0..orders.len()).collect::<Vec<_>>(), rng)?;
            Some(Spec::RookFirst {
                order: orders[i].clone(),
            })
        }
        Kind::PromotionPieceChanged => {
            let Move::Normal {
                role,
                from,
                capture,
                to,
                promotion: Some(promo),
            } = *m
            else {
                return None;
            };
            let fits = |wrong: Role| {
                let w = Move::Normal {
                    role,
                    from,
                    capture,
                    to,
                    promotion: Some(wrong),
                };
                let mut p = pos.clone();
                p.play_unchecked(w);
                wrong != promo && !ends_game(&p)
            };
            let wrong = if promo != Role::Queen && fits(Role::Queen) {
                Role::Queen
            } else {
                let others: Vec<Role> = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight]
                    .into_iter()
                    .filter(|&r| fits(r))
                    .collect();
                choose(&others, rng)?
            };
            Some(Spec::PromotionChanged { wrong })
        }
        Kind::MoveChangedAfterRelease => {
            let (_, from, _, to) = unpromoted(m)?;
            let vias: Vec<Square> = pos
                .legal_moves()
                .into_iter()
                .filter(|n| {
                    matches!(*n, Move::Normal { from: f, to: t, capture: None, promotion: None, .. }
                        if f == from && t != to)
                        && {
                            let mut p = pos.clone();
                            p.play_unchecked(*n);
                            !ends_game(&p)
                        }
                })
                .map(|n| n.to())
                .collect();
            Some(Spec::MoveChanged {
                via: choose(&vias, rng)?,
            })
        }
        Kind::IllegalMove => {
            let mut cands = Vec::new();
            for s in board.by_color(us) {
                let piece = board.piece_at(s)?;
                let reach = legal_reach(pos, s);
                let range = if piece.role == Role::King { 1 } else { 2 };
                for u in !board.occupied() & !reach {
                    let pawn_end = piece.role == Role::Pawn
                        && matches!(u.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth);
                    if s.distance(u) > range || pawn_end {
                        continue;
                    }
                    let b = relocated(board, s, u);
                    if kings_in_centre(&b) || looks_like_a_start(&b) {
                        continue;
                    }
                    cands.push((s, u));
                }
            }
            let (from, to) = choose(&cands, rng)?;
            Some(Spec::Illegal { from, to })
        }
        Kind::PawnNotPromoted => (m.promotion() == Some(Role::Queen) && trace.press.is_some())
            .then_some(Spec::PawnNotPromoted),
        Kind::ClockPressedWithoutMove => Some(Spec::PressWithoutMove),
        Kind::KnockedPiece => {
            let ab = after.board();
            // Not onto a square the move passed over either.
            let moved = move_squares(m, us) | move_path(m, us);
            let mut cands = Vec::new();
            // Onto any empty neighbour, a legal move of the next player's too (the knock is
            // lifted as the mover lets go, faster than any hand reacts).
            for s in ab.occupied() & !ab.kings() & !moved {
                for u in attacks::king_attacks(s) & !ab.occupied() & !moved {
                    let b = relocated(ab, s, u);
                    if !looks_like_a_start(&b) {
                        cands.push((s, u));
                    }
                }
            }
            let (from, to) = choose(&cands, rng)?;
            Some(Spec::Knock { from, to })
        }
        Kind::MovedPieceOffTarget => {
            let (role, from, _, to) = unpromoted(m)?;
            if role == Role::King {
                return None;
            }
            let reach = legal_reach(pos, from);
            let vias: Vec<Square> = (attacks::king_attacks(to) & !board.occupied() & !reach)
                .into_iter()
                .filter(|&u| u != from && !looks_like_a_start(&relocated(board, from, u)))
                .collect();
            Some(Spec::OffTarget {
                via: choose(&vias, rng)?,
            })
        }
    }
}

/// Chooses what to inject: rare kinds first where they fit, then the others in turn.
fn plan(
    positions: &[Chess],
    moves: &[Move],
    world: &World,
    cfg: &InjectConfig,
    setup: bool,
    rng: &mut Rng,
) -> Vec<(Kind, usize, Spec)> {
    let n = moves.len();
    // Plies that take an injection: completed by a press, and in a set-up game not the first
    // two (the game only starts with the first move the board shows).
    let open = |i: usize| world.plies[i].press.is_some() && !(setup && i < 2);
    let mut chosen: Vec<(Kind, usize, Spec)> = Vec::new();
    if let Some(plan) = &cfg.plan {
        for &(kind, ply) in plan {
            let Some(i) = ply.checked_sub(1).filter(|&i| i < n && open(i)) else {
                continue;
            };
            if let Some(spec) = fit(kind, &positions[i], &moves[i], &world.plies[i], rng) {
                chosen.push((kind, i, spec));
            }
        }
        chosen.sort_by_key(|c| c.1);
        return chosen;
    }
    let mut rare: Vec<Kind> = cfg.kinds.iter().copied().filter(|k| k.is_rare()).collect();
    let mut common: Vec<Kind> = cfg.kinds.iter().copied().filter(|k| !k.is_rare()).collect();
    rng.shuffle(&mut rare);
    rng.shuffle(&mut common);
    let mut queue: Vec<Kind> = rare;
    while queue.len() < cfg.count + 8 && !common.is_empty() {
        queue.extend(common.iter().copied());
    }
    let mut illegal_by = [0u32; 2];
    for kind in queue {
        if chosen.len() >= cfg.count {
            break;
        }
        let mut plies: Vec<usize> = (0..n)
            .filter(|&i| open(i) && chosen.iter().all(|c| c.1.abs_diff(i) >= 2))
            .filter(|&i| {
                !kind.is_illegal_move() || illegal_by[positions[i].turn().fold_wb(0, 1)] == 0
            })
            .collect();
        rng.shuffle(&mut plies);
        for i in plies {
            if let Some(spec) = fit(kind, &positions[i], &moves[i], &world.plies[i], rng) {
                if kind.is_illegal_move() {
                    illegal_by[positions[i].turn().fold_wb(0, 1)] += 1;
                }
                chosen.push((kind, i, spec));
                break;
            }
        }
    }
    chosen.sort_by_key(|c| c.1);
    chosen
}

// ---------------------------------------------------------------------------------------------
// Carrying the injections out

/// The leading lifts of a move's hand order (the pieces taken off before any placement).
fn removals(order: &[HandAction]) -> Vec<HandAction> {
    order
        .iter()
        .take_while(|a| matches!(a, HandAction::Lift(_)))
        .copied()
        .collect()
}

fn apply(
    world: &mut World,
    i: usize,
    pos: &Chess,
    m: &Move,
    spec: &Spec,
    style: Style,
    rng: &mut Rng,
) {
    use HandAction::{Lift, Place};
    let us = pos.turn();
    let first = world.plies[i].first_action;
    let prev = world.prev_press(i);
    let mover = |role| Piece { color: us, role };
    match *spec {
        Spec::Touch { square, piece } => {
            let t1 = first.max(prev + 800 * MS);
            let hold = ms(rng, 800, 2500);
            let after = ms(rng, 500, 2000);
            world.shift_from(first, t1 - first + hold + after);
            world.add(t1, Lift(square));
            world.add(t1 + hold, Place(square, piece));
        }
        Spec::RookFirst { ref order } => {
            // Every action more than two scans after the one before, so that the board shows
            // the order (two lifts within one scan are reported in any order) and a piece put
            // back on its square is a touch, not noise.
            let actions: Vec<(Micros, HandAction)> =
                order.iter().map(|&a| (ms(rng, 600, 1200), a)).collect();
            world.rebuild(i, &actions);
        }
        Spec::PromotionChanged { wrong } => {
            let Move::Normal {
                to,
                promotion: Some(promo),
                ..
            } = *m
            else {
                return;
            };
            let mut actions: Vec<(Micros, HandAction)> = removals(&world.plies[i].order)
                .into_iter()
                .map(|a| (hand_gap(style, rng), a))
                .collect();
            actions.push((ms(rng, 400, 2000), Place(to, mover(wrong))));
            actions.push((ms(rng, 800, 2500), Lift(to)));
            actions.push((ms(rng, 300, 1500), Place(to, mover(promo))));
            world.rebuild(i, &actions);
        }
        Spec::MoveChanged { via } => {
            let Some((role, from, capture, to)) = normal_move(m) else {
                return;
            };
            let mut actions = vec![
                (0, Lift(from)),
                (hand_gap(style, rng), Place(via, mover(role))),
                (ms(rng, 1500, 3000), Lift(via)),
            ];
            if capture.is_some() {
                actions.push((hand_gap(style, rng), Lift(to)));
            }
            actions.push((hand_gap(style, rng), Place(to, mover(role))));
            world.rebuild(i, &actions);
        }
        Spec::OffTarget { via } => {
            let Some((role, from, capture, to)) = normal_move(m) else {
                return;
            };
            let victim_first = capture.is_some() && rng.chance(0.5);
            let mut actions = Vec::new();
            if victim_first {
                actions.push((0, Lift(to)));
            }
            actions.push((hand_gap(style, rng), Lift(from)));
            actions.push((hand_gap(style, rng), Place(via, mover(role))));
            actions.push((ms(rng, 1500, 4000), Lift(via)));
            if capture.is_some() && !victim_first {
                actions.push((hand_gap(style, rng), Lift(to)));
            }
            actions.push((hand_gap(style, rng), Place(to, mover(role))));
            world.rebuild(i, &actions);
        }
        Spec::Knock { from, to } => {
            let last = world.plies[i].last_action;
            let piece = {
                let mut a = pos.clone();
                a.play_unchecked(*m);
                a.board().piece_at(from).expect("knocked piece")
            };
            let lift = last + ms(rng, 5, 150);
            let down = lift + ms(rng, 100, 300);
            let up = down + ms(rng, 1500, 4000);
            let back = up + ms(rng, 300, 1000);
            world.shift_from(last + 1, back + 100 * MS - last);
            world.there_and_back(from, to, piece, [lift, down, up, back]);
        }
        Spec::Illegal { from, to } => {
            let piece = pos.board().piece_at(from).expect("relocated piece");
            let t1 = first.max(prev + 800 * MS);
            let down = t1 + ms(rng, 300, 1200);
            let press = down + ms(rng, 300, 2000);
            let pause = press + ms(rng, 2000, 5000);
            let up = pause + ms(rng, 1500, 4000);
            let back = up + ms(rng, 400, 1000);
            let flip = back + ms(rng, 500, 1500);
            world.press_undone(rng, first, [press, pause, flip]);
            world.there_and_back(from, to, piece, [t1, down, up, back]);
        }
        Spec::PressWithoutMove => {
            let press = first.max(prev + SEC);
            let pause = press + ms(rng, 2000, 5000);
            let flip = pause + ms(rng, 1500, 4000);
            world.press_undone(rng, first, [press, pause, flip]);
        }
        Spec::PawnNotPromoted => {
            let to = m.to();
            let mut actions: Vec<(Micros, HandAction)> = removals(&world.plies[i].order)
                .into_iter()
                .map(|a| (hand_gap(style, rng), a))
                .collect();
            actions.push((hand_gap(style, rng), Place(to, mover(Role::Pawn))));
            world.rebuild(i, &actions);
            let Some(press) = world.plies[i].press else {
                return;
            };
            let up = press + ms(rng, 1500, 5000);
            let down = up + ms(rng, 500, 1500);
            let next = down + ms(rng, 600, 2000);
            world.shift_from(press + 1, next - press);
            world.add(up, Lift(to));
            world.add(down, Place(to, mover(Role::Queen)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The clock

/// What `op` does to the clock at `t` (the simulated DGT 3000 of [`super::clock`], which the
/// arbiter may pause, set and restart).
fn apply_clock(clock: &mut Dgt3000, t: Micros, op: ClockOp) -> ClockReading {
    match op {
        ClockOp::Start(color) => clock.start(t, color),
        ClockOp::Press => clock.press(t),
        ClockOp::Pause => clock.pause(t),
        ClockOp::Flip => clock.flip(t),
        ClockOp::Resume => clock.resume(t),
    }
}

// ---------------------------------------------------------------------------------------------
// The whole pipeline

/// The capture of `game` (as [`super::synthesize_game`] with `cfg.sim`) with irregularities
/// injected as `cfg` says, and its truth.
pub fn inject(game: &ScriptGame, cfg: &InjectConfig) -> Injected {
    let sim = &cfg.sim;
    let start = &game.start;
    let moves = &game.moves;
    // The same random streams as `super::simulate`: without injections, the same bytes.
    let mut r_game = Rng::derive(sim.seed, 5);
    let mut r_scan = Rng::derive(sim.seed, 6);
    let mut r_plan = Rng::derive(sim.seed, 41);
    let mut r_time = Rng::derive(sim.seed, 42);
    let white_on_right = sim.white_on_right.unwrap_or_else(|| r_game.chance(0.5));
    let ticks = sim
        .clock_ticks
        .unwrap_or_else(|| sim.style != Style::Clean && r_game.chance(0.25));
    let mut tl = timeline::build(start, moves, &game.clocks, game.time_control(), sim);
    tl.events.sort_by_key(|e| e.t);
    tl.glitches.sort_by_key(|g| g.t);
    let mut clock = vec![(tl.clock_start, ClockOp::Start(start.turn()))];
    clock.extend(
        tl.plies
            .iter()
            .filter_map(|p| p.press)
            .map(|t| (t, ClockOp::Press)),
    );
    let mut world = World {
        events: tl.events,
        glitches: tl.glitches,
        clock,
        plies: tl.plies,
        clock_start: tl.clock_start,
        end: tl.end,
    };
    let mut positions = Vec::with_capacity(moves.len());
    let mut pos = start.clone();
    for m in moves {
        positions.push(pos.clone());
        pos.play_unchecked(*m);
    }
    let setup = !game.is_chess960() && game.tag("FEN").is_some();
    let chosen = plan(&positions, moves, &world, cfg, setup, &mut r_plan);
    let mut injections = Vec::new();
    let mut truth = Vec::new();
    for (kind, i, spec) in &chosen {
        apply(
            &mut world,
            *i,
            &positions[*i],
            &moves[*i],
            spec,
            sim.style,
            &mut r_time,
        );
        injections.push(Injection {
            kind: *kind,
            ply: *i as u32 + 1,
            squares: spec.squares(&moves[*i]),
        });
        truth.push((kind.code(), *i as u32 + 1));
        // 7.5.1: 4.3 applies to the move replacing the illegal move. The piece the illegal
        // move moved was touched: a replacing move made with another piece, when that one could
        // have moved legally, breaks touch-move.
        if let Spec::Illegal { from, .. } = spec {
            let m = &moves[*i];
            let moved = match *m {
                Move::Castle { king, rook } => king == *from || rook == *from,
                _ => m.from() == Some(*from),
            };
            if !moved && can_move(&positions[*i], *from) {
                truth.push(("touched_piece_not_moved", *i as u32 + 1));
            }
        }
    }
    if sim.reversed_board {
        truth.push(("board_reversed", 0));
    }
    let mut tolerated = Vec::new();
    for p in &world.plies {
        let injected = chosen
            .iter()
            .any(|c| c.1 + 1 == p.ply && c.0 == Kind::CastlingRookTouchedFirst);
        match rook_first_verdict(&world.events, p, sim.style) {
            _ if injected => {}
            Some(true) => truth.push(("castling_rook_touched_first", p.ply as u32)),
            Some(false) => tolerated.push(("castling_rook_touched_first", p.ply as u32)),
            None => {}
        }
    }
    truth.sort();
    let records = records(start, &mut world, sim, white_on_right, ticks, &mut r_scan);
    Injected {
        records,
        plies: world.plies,
        white_on_right,
        sans: sans_of(start, moves),
        injections,
        truth,
        tolerated,
    }
}

/// What the board and the clock send, as capture records (as in [`super::simulate`]).
fn records(
    start: &Chess,
    world: &mut World,
    sim: &SimConfig,
    white_on_right: bool,
    ticks: bool,
    r_scan: &mut Rng,
) -> Vec<Record> {
    world.events.sort_by_key(|e| e.t);
    world.glitches.sort_by_key(|g| g.t);
    world.clock.sort_by_key(|c| c.0);
    let mut out: Vec<(Micros, DgtMessage)> = Vec::new();
    let reports = match sim.style {
        Style::Clean => scan::immediate(start.board(), &world.events, &world.glitches, 220_000),
        _ => scan::scan(
            start.board(),
            &world.events,
            &world.glitches,
            world.clock_start,
            world.end,
            ScanTiming::default(),
            r_scan,
        ),
    };
    for r in reports {
        out.push((
            r.t,
            DgtMessage::FieldUpdate {
                index: field_index(r.square, sim.reversed_board),
                reading: r.reading,
            },
        ));
    }
    let mut clk = Dgt3000::new(ClockConfig {
        base_ms: sim.base_ms,
        increment_ms: sim.increment_ms,
        white_on_right,
    });
    for (k, &(t, op)) in world.clock.iter().enumerate() {
        let reading = apply_clock(&mut clk, t, op);
        out.push((t, DgtMessage::ClockTimes(reading)));
        let until = world.clock.get(k + 1).map_or(world.end, |c| c.0);
        if ticks && clk.is_running() {
            let mut tick = t + SEC;
            while tick < until {
                out.push((tick, DgtMessage::ClockTimes(clk.reading(tick))));
                tick += SEC;
            }
        }
    }
    super::capture_records(start, sim, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{pgn, synthesize};

    const PGN: &str = "[Event \"t\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Nf6 4. O-O Be7 5. d4 exd4 \
                       6. e5 Ne4 7. Re1 d5 8. exd6 Nxd6 9. Bd3 O-O 10. Nxd4 Nxd4 11. Qg4 Bf6 *";

    fn game() -> ScriptGame {
        pgn::parse_games(PGN).remove(0).unwrap()
    }

    #[test]
    fn without_injections_the_capture_is_the_simulators() {
        for style in [Style::Clean, Style::Human, Style::Blitz] {
            let g = game();
            let mut cfg = InjectConfig::new(11);
            cfg.sim = SimConfig {
                clock_ticks: Some(true),
                ..SimConfig::new(style, 11)
            };
            cfg.count = 0;
            let got = inject(&g, &cfg);
            assert_eq!(got.records, synthesize(&g, &cfg.sim), "{style:?}");
            assert!(got.injections.is_empty());
        }
    }

    #[test]
    fn injections_are_spaced_and_counted_in_the_truth() {
        let g = game();
        let got = inject(&g, &InjectConfig::new(5));
        assert!(got.injections.len() >= 4, "{:?}", got.injections);
        for w in got.injections.windows(2) {
            assert!(w[1].ply >= w[0].ply + 2);
        }
        for inj in &got.injections {
            assert!(got.truth.contains(&(inj.kind.code(), inj.ply)));
        }
        assert_eq!(got.sans.len(), g.moves.len());
    }
}
