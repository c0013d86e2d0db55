//! The physical timeline of a game: when each hand action happens and when the clock is pressed.

use shakmaty::{Board, Chess, Move, Position, Square};

use super::hand::{self, HandAction};
use super::rng::Rng;
use super::scan::{Glitch, PhysEvent};
use super::{SimConfig, Style};
use crate::core::observation::{Micros, SquareReading};

const MS: Micros = 1000;
const SEC: Micros = 1_000_000;

/// What the simulated players did in one ply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlyTrace {
    /// Ply number, 1 = the first move of the game.
    pub ply: usize,
    /// The move.
    pub mv: Move,
    /// The hand order used (as listed by [`hand::orders`], without slide visits).
    pub order: Vec<HandAction>,
    /// Squares the piece was briefly put on while sliding (physically; the board may not see them).
    pub slid_over: Vec<Square>,
    /// Time of the first hand action.
    pub first_action: Micros,
    /// Time of the last hand action.
    pub last_action: Micros,
    /// Time of the clock press completing the move; `None` when the move ended the game.
    pub press: Option<Micros>,
}

/// The whole physical game.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Every physical change on the board, in time order.
    pub events: Vec<PhysEvent>,
    /// One-scan sensor glitches, in time order.
    pub glitches: Vec<Glitch>,
    /// Per ply, what happened.
    pub plies: Vec<PlyTrace>,
    /// When the clock was started.
    pub clock_start: Micros,
    /// When the capture ends.
    pub end: Micros,
}

fn ms(rng: &mut Rng, lo: i64, hi: i64) -> Micros {
    rng.range(lo * MS, hi * MS)
}

/// Think time of ply `i` (from the previous press to this press): from the PGN `[%clk]`
/// comments when they and the time control allow it, else random for the style.
fn think_time(
    i: usize,
    clocks: &[Option<u32>],
    tc: Option<(u32, u32)>,
    style: Style,
    rng: &mut Rng,
) -> Micros {
    let now = clocks.get(i).copied().flatten();
    let before = if i >= 2 {
        clocks.get(i - 2).copied().flatten()
    } else {
        tc.map(|t| t.0)
    };
    if let (Some(now), Some(before)) = (now, before) {
        let inc = tc.map_or(0, |t| t.1);
        // Broadcast clocks are rounded: a slightly negative use is a very fast move.
        let used = i64::from(before) + i64::from(inc) - i64::from(now);
        if (-30_000..=3_600_000).contains(&used) {
            return used.max(0) * MS;
        }
    }
    let u = rng.unit();
    match style {
        Style::Blitz => SEC + (11.0 * u * u * SEC as f64) as Micros,
        _ => 2 * SEC + (58.0 * u * u * u * SEC as f64) as Micros,
    }
}

/// Gap before action `j` of `order` (j ≥ 1).
fn gap(order: &[HandAction], j: usize, m: &Move, style: Style, rng: &mut Rng) -> Micros {
    let (prev, cur) = (order[j - 1], order[j]);
    let is_final_promo = m.is_promotion() && j == order.len() - 1;
    if is_final_promo && style != Style::Clean {
        // Reaching for the new piece.
        return if style == Style::Blitz {
            ms(rng, 200, 1000)
        } else {
            ms(rng, 400, 3000)
        };
    }
    let replace = matches!((prev, cur), (HandAction::Lift(a), HandAction::Place(b, _)) if a == b);
    match style {
        Style::Clean => ms(rng, 200, 1000),
        Style::Human if replace && rng.chance(0.5) => ms(rng, 20, 150),
        Style::Blitz if replace && rng.chance(0.7) => ms(rng, 20, 120),
        Style::Human => ms(rng, 150, 900),
        Style::Blitz => ms(rng, 80, 400),
    }
}

fn press_delay(style: Style, rng: &mut Rng) -> Micros {
    let u = rng.unit();
    match style {
        Style::Clean => ms(rng, 300, 1500),
        Style::Human => 300 * MS + (2700.0 * u * u) as Micros * MS,
        Style::Blitz => ms(rng, 50, 300),
    }
}

/// Slide visits before the final placement `place_t` of `piece` from `from` to `to`:
/// (place time, lift time, square), fitted after `not_before`.
fn slide_visits(
    board: &Board,
    from: Square,
    to: Square,
    place_t: Micros,
    not_before: Micros,
    rng: &mut Rng,
) -> Vec<(Micros, Micros, Square)> {
    let path: Vec<Square> = hand::slide_path(from, to)
        .into_iter()
        .filter(|sq| board.piece_at(*sq).is_none())
        .collect();
    let mut visits = Vec::new();
    let mut cursor = place_t - ms(rng, 5, 40);
    for &sq in path.iter().rev() {
        let dwell = ms(rng, 30, 160);
        let placed = cursor - dwell;
        if placed <= not_before + 10 * MS {
            break;
        }
        visits.push((placed, cursor, sq));
        cursor = placed - ms(rng, 5, 60);
    }
    visits.reverse();
    visits
}

fn reading(a: HandAction) -> (Square, SquareReading) {
    match a {
        HandAction::Lift(sq) => (sq, SquareReading::Empty),
        HandAction::Place(sq, p) => (sq, SquareReading::Piece(p)),
    }
}

/// A glitch of a square the move does not touch (`order`), at a random time in `window`:
/// none when the window is empty or every piece is touched.
fn glitch(
    phys: &Board,
    order: &[HandAction],
    (lo, hi): (Micros, Micros),
    rng: &mut Rng,
) -> Option<super::scan::Glitch> {
    let touched: Vec<Square> = order.iter().map(|a| reading(*a).0).collect();
    let candidates: Vec<Square> = phys
        .occupied()
        .into_iter()
        .filter(|sq| !touched.contains(sq))
        .collect();
    if hi <= lo || candidates.is_empty() {
        return None;
    }
    let sq = candidates[rng.below(candidates.len() as u64) as usize];
    Some(super::scan::Glitch {
        t: rng.range(lo, hi),
        square: sq,
    })
}

/// The readings of move `m`'s hand `order` (with `gaps` between its actions) from `first` on
/// `phys`, each slide of a piece over the squares in between included (`slides`: their
/// randomness, `None`: no slides): the time of its last action and the squares slid over.
fn hand_events(
    phys: &mut Board,
    order: &[HandAction],
    gaps: &[Micros],
    first: Micros,
    m: &Move,
    mut slides: Option<&mut Rng>,
    events: &mut Vec<PhysEvent>,
) -> (Micros, Vec<Square>) {
    let mut t = first;
    let mut slid_over = Vec::new();
    let mut lifted: Vec<(Square, shakmaty::Piece)> = Vec::new();
    for (j, &a) in order.iter().enumerate() {
        if j > 0 {
            t += gaps[j - 1];
        }
        if let HandAction::Place(to, piece) = a
            && let Some(r_slide) = slides.as_deref_mut()
            && j > 0
            && hand::slides(piece.role, m.is_castle())
            && let Some(&(from, _)) = lifted.iter().rev().find(|(s, p)| *p == piece && *s != to)
            && r_slide.chance(0.35)
        {
            for (pt, lt, sq) in slide_visits(phys, from, to, t, t - gaps[j - 1], r_slide) {
                events.push(PhysEvent {
                    t: pt,
                    square: sq,
                    reading: SquareReading::Piece(piece),
                });
                events.push(PhysEvent {
                    t: lt,
                    square: sq,
                    reading: SquareReading::Empty,
                });
                slid_over.push(sq);
            }
        }
        if let HandAction::Lift(sq) = a
            && let Some(p) = phys.piece_at(sq)
        {
            lifted.push((sq, p));
        }
        let ok = hand::apply_action(phys, a);
        debug_assert!(ok, "impossible hand action {a:?}");
        let (square, r) = reading(a);
        events.push(PhysEvent {
            t,
            square,
            reading: r,
        });
    }
    (t, slid_over)
}

/// Builds the physical timeline of `moves` played from `start`.
pub fn build(
    start: &Chess,
    moves: &[Move],
    clocks: &[Option<u32>],
    tc: Option<(u32, u32)>,
    cfg: &SimConfig,
) -> Timeline {
    let mut r_order = Rng::derive(cfg.seed, 1);
    let mut r_time = Rng::derive(cfg.seed, 2);
    let mut r_slide = Rng::derive(cfg.seed, 3);
    let mut r_glitch = Rng::derive(cfg.seed, 4);
    let clock_start = ms(&mut r_time, 1000, 5000);
    let mut pos = start.clone();
    let mut phys = start.board().clone();
    let (mut events, mut glitches, mut plies) = (Vec::new(), Vec::new(), Vec::new());
    let mut prev_press = clock_start;
    for (i, m) in moves.iter().enumerate() {
        let order = hand::random_order(&pos, m, cfg.style, &mut r_order);
        let after = pos.clone().play(*m).expect("simulated moves must be legal");
        let game_over = after.is_game_over();
        let gaps: Vec<Micros> = (1..order.len())
            .map(|j| gap(&order, j, m, cfg.style, &mut r_time))
            .collect();
        let duration: Micros = gaps.iter().sum();
        let delay = press_delay(cfg.style, &mut r_time);
        let think = think_time(i, clocks, tc, cfg.style, &mut r_time);
        let reaction = if cfg.style == Style::Blitz {
            ms(&mut r_time, 200, 600)
        } else {
            ms(&mut r_time, 400, 1500)
        };
        let first = (prev_press + think - delay - duration).max(prev_press + reaction);
        if cfg.glitches
            && r_glitch.chance(0.05)
            && let Some(g) = glitch(
                &phys,
                &order,
                (prev_press + 600 * MS, first - 600 * MS),
                &mut r_glitch,
            )
        {
            glitches.push(g);
        }
        let slides = cfg.slides.then_some(&mut r_slide);
        let (t, slid_over) = hand_events(&mut phys, &order, &gaps, first, m, slides, &mut events);
        debug_assert_eq!(
            &phys,
            after.board(),
            "hand order does not give the move's board"
        );
        let press = (!game_over).then_some(t + delay);
        plies.push(PlyTrace {
            ply: i + 1,
            mv: *m,
            order,
            slid_over,
            first_action: first,
            last_action: t,
            press,
        });
        prev_press = press.unwrap_or(t);
        pos = after;
    }
    let end = prev_press + ms(&mut r_time, 500, 1500);
    Timeline {
        events,
        glitches,
        plies,
        clock_start,
        end,
    }
}
