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
use shakmaty::{Chess, Color, Move, Position, Role, Square};

use super::clock::{ClockConfig, Dgt3000};
use super::hand::HandAction;
use super::pgn::ScriptGame;
use super::rng::Rng;
use super::scan::{self, PhysEvent, ScanTiming};
use super::timeline::{self, PlyTrace};
use super::{SimConfig, Style, field_index};
use crate::capture::Record;
use crate::core::observation::{Micros, SquareReading};
use crate::driver::dgt::DgtMessage;

mod fit;
mod world;

use fit::{Spec, can_move, plan};
use world::{ClockOp, World, apply, apply_clock};

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
// The whole pipeline

/// The physical game of timeline `tl` (events and glitches in time order), its clock started
/// for `first` and pressed at each ply's press.
fn world_of(mut tl: timeline::Timeline, first: Color) -> World {
    tl.events.sort_by_key(|e| e.t);
    tl.glitches.sort_by_key(|g| g.t);
    let mut clock = vec![(tl.clock_start, ClockOp::Start(first))];
    clock.extend(
        tl.plies
            .iter()
            .filter_map(|p| p.press)
            .map(|t| (t, ClockOp::Press)),
    );
    World {
        events: tl.events,
        glitches: tl.glitches,
        clock,
        plies: tl.plies,
        clock_start: tl.clock_start,
        end: tl.end,
    }
}

/// Whether move `m` moves the piece on `square` (either piece of a castling).
fn moves_piece_on(m: &Move, square: Square) -> bool {
    match *m {
        Move::Castle { king, rook } => king == square || rook == square,
        _ => m.from() == Some(square),
    }
}

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
    let tl = timeline::build(start, moves, &game.clocks, game.time_control(), sim);
    let mut world = world_of(tl, start.turn());
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
        if let Spec::Illegal { from, .. } = spec
            && !moves_piece_on(&moves[*i], *from)
            && can_move(&positions[*i], *from)
        {
            truth.push(("touched_piece_not_moved", *i as u32 + 1));
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
