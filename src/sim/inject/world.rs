//! The physical game being edited ([`World`]): its board changes, glitches and clock actions,
//! and the injections carried out on it.

use shakmaty::{Chess, Color, Move, Piece, Position, Role, Square};

use crate::core::observation::{ClockReading, Micros, SquareReading};
use crate::sim::Style;
use crate::sim::clock::Dgt3000;
use crate::sim::hand::{HandAction, normal_move};
use crate::sim::rng::Rng;
use crate::sim::scan::{Glitch, PhysEvent};
use crate::sim::timeline::PlyTrace;

use super::fit::Spec;
use super::{MS, SEC};

// ---------------------------------------------------------------------------------------------
// The physical world being edited

/// What the clock is made to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClockOp {
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
pub(super) struct World {
    pub(super) events: Vec<PhysEvent>,
    pub(super) glitches: Vec<Glitch>,
    pub(super) clock: Vec<(Micros, ClockOp)>,
    pub(super) plies: Vec<PlyTrace>,
    pub(super) clock_start: Micros,
    pub(super) end: Micros,
}

impl World {
    /// Shifts everything at or after `t0` by `d`.
    pub(super) fn shift_from(&mut self, t0: Micros, d: Micros) {
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

    pub(super) fn add(&mut self, t: Micros, action: HandAction) {
        let (square, reading) = match action {
            HandAction::Lift(sq) => (sq, SquareReading::Empty),
            HandAction::Place(sq, p) => (sq, SquareReading::Piece(p)),
        };
        self.events.push(PhysEvent { t, square, reading });
    }

    /// A piece lifted from `from`, set down on `to`, lifted again and put back on `from`, at
    /// the four times `t`.
    pub(super) fn there_and_back(
        &mut self,
        from: Square,
        to: Square,
        piece: Piece,
        t: [Micros; 4],
    ) {
        self.add(t[0], HandAction::Lift(from));
        self.add(t[1], HandAction::Place(to, piece));
        self.add(t[2], HandAction::Lift(to));
        self.add(t[3], HandAction::Place(from, piece));
    }

    /// A press the arbiter undoes: pressed, paused and flipped back at the three times given,
    /// resumed a moment after; the game goes on (from `first`) a while after the resume.
    pub(super) fn press_undone(
        &mut self,
        rng: &mut Rng,
        first: Micros,
        [press, pause, flip]: [Micros; 3],
    ) {
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
    pub(super) fn prev_press(&self, i: usize) -> Micros {
        match i {
            0 => self.clock_start,
            _ => self.plies[i - 1]
                .press
                .unwrap_or(self.plies[i - 1].last_action),
        }
    }

    /// Replaces the hand actions of ply index `i` by `actions` (gap before each; the first
    /// starts at the ply's first action), keeping the press delay.
    pub(super) fn rebuild(&mut self, i: usize, actions: &[(Micros, HandAction)]) {
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

pub(super) fn ms(rng: &mut Rng, lo: i64, hi: i64) -> Micros {
    rng.range(lo * MS, hi * MS)
}

/// Gap between two hand actions of one move.
pub(super) fn hand_gap(style: Style, rng: &mut Rng) -> Micros {
    match style {
        Style::Clean => ms(rng, 200, 1000),
        Style::Human => ms(rng, 150, 900),
        Style::Blitz => ms(rng, 80, 400),
    }
}

// ---------------------------------------------------------------------------------------------
// Carrying the injections out

/// The leading lifts of a move's hand order (the pieces taken off before any placement).
pub(super) fn removals(order: &[HandAction]) -> Vec<HandAction> {
    order
        .iter()
        .take_while(|a| matches!(a, HandAction::Lift(_)))
        .copied()
        .collect()
}

/// Carries out `spec` on ply index `i` (move `m` from `pos`) of `world`, with the random
/// choices made.
pub(super) fn apply(
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
            let removed = removals(&world.plies[i].order);
            if let Some(actions) = promotion_changed(&removed, m, us, wrong, style, rng) {
                world.rebuild(i, &actions);
            }
        }
        Spec::MoveChanged { via } => {
            if let Some(actions) = via_order(m, us, (Via::Changed, via), style, rng) {
                world.rebuild(i, &actions);
            }
        }
        Spec::OffTarget { via } => {
            if let Some(actions) = via_order(m, us, (Via::OffTarget, via), style, rng) {
                world.rebuild(i, &actions);
            }
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
        Spec::PawnNotPromoted => pawn_not_promoted(world, i, m.to(), us, style, rng),
    }
}

/// The hand order of a promotion put down as `wrong` first (after the move's `removed`
/// pieces), then lifted and replaced by the piece played.
fn promotion_changed(
    removed: &[HandAction],
    m: &Move,
    us: Color,
    wrong: Role,
    style: Style,
    rng: &mut Rng,
) -> Option<Vec<(Micros, HandAction)>> {
    use HandAction::{Lift, Place};
    let Move::Normal {
        to,
        promotion: Some(promo),
        ..
    } = *m
    else {
        return None;
    };
    let mover = |role| Piece { color: us, role };
    let mut actions: Vec<(Micros, HandAction)> =
        removed.iter().map(|&a| (hand_gap(style, rng), a)).collect();
    actions.push((ms(rng, 400, 2000), Place(to, mover(wrong))));
    actions.push((ms(rng, 800, 2500), Lift(to)));
    actions.push((ms(rng, 300, 1500), Place(to, mover(promo))));
    Some(actions)
}

/// How a move's piece goes to its square by way of another.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// Put down on another square it could go to, held there, then moved on
    /// (move_changed_after_release).
    Changed,
    /// Put down beside its target, then slid on (moved_piece_off_target); a victim is taken
    /// off first or after, at random.
    OffTarget,
}

/// The hand order of move `m` of `us` by way of `via`.
fn via_order(
    m: &Move,
    us: Color,
    (way, via): (Via, Square),
    style: Style,
    rng: &mut Rng,
) -> Option<Vec<(Micros, HandAction)>> {
    use HandAction::{Lift, Place};
    let (role, from, capture, to) = normal_move(m)?;
    let piece = Piece { color: us, role };
    let off_target = way == Via::OffTarget;
    let victim_first = off_target && capture.is_some() && rng.chance(0.5);
    let mut actions = Vec::new();
    if victim_first {
        actions.push((0, Lift(to)));
    }
    let lift_after = if off_target { hand_gap(style, rng) } else { 0 };
    actions.push((lift_after, Lift(from)));
    actions.push((hand_gap(style, rng), Place(via, piece)));
    let held = if off_target { 4000 } else { 3000 };
    actions.push((ms(rng, 1500, held), Lift(via)));
    if capture.is_some() && !victim_first {
        actions.push((hand_gap(style, rng), Lift(to)));
    }
    actions.push((hand_gap(style, rng), Place(to, piece)));
    Some(actions)
}

/// A pawn moved to `to`, its last rank, and left a pawn past the clock press; the queen
/// replaces it a while later.
fn pawn_not_promoted(
    world: &mut World,
    i: usize,
    to: Square,
    us: Color,
    style: Style,
    rng: &mut Rng,
) {
    use HandAction::{Lift, Place};
    let mover = |role| Piece { color: us, role };
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

// ---------------------------------------------------------------------------------------------
// The clock

/// What `op` does to the clock at `t` (the simulated DGT 3000 of [`super::clock`], which the
/// arbiter may pause, set and restart).
pub(super) fn apply_clock(clock: &mut Dgt3000, t: Micros, op: ClockOp) -> ClockReading {
    match op {
        ClockOp::Start(color) => clock.start(t, color),
        ClockOp::Press => clock.press(t),
        ClockOp::Pause => clock.pause(t),
        ClockOp::Flip => clock.flip(t),
        ClockOp::Resume => clock.resume(t),
    }
}
