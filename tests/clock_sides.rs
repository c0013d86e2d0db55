//! Which clock face is White's, learned from evidence (issue 9): the core fed a game played on a
//! board with a DGT 3000 that behaves like the real one (a reading about once a second while it
//! runs, lever and turn bits as real clocks send them), in the ways real players get it wrong.
//!
//! The truth is the simulated clock's: which face belongs to which colour and which face is
//! counting down. Every check compares the core's events with it.

mod support;

use eboardd::core::engine::EngineConfig;
use eboardd::core::event::{CompletedBy, EventKind};
use eboardd::core::observation::{
    ClockFace, ClockReading, ClockSide, Micros, Observation, SquareReading,
};
use shakmaty::{Chess, Color, Position, Square, san::San};
use support::fields_of;
use support::rig::Rig;

const S: Micros = 1_000_000;

/// A DGT 3000 in increment mode: whole seconds shown, +10 s per press.
struct Clock {
    left_ms: i64,
    right_ms: i64,
    running: Option<ClockSide>,
    /// The face White plays on (truth).
    white: ClockSide,
}

impl Clock {
    fn reading(&self) -> ClockReading {
        let face = |ms: i64| ClockFace {
            millis: (ms.max(0) / 1000 * 1000) as u32,
            ..Default::default()
        };
        // The face whose turn it is: the running one, or (paused) the left one.
        let right = self.running == Some(ClockSide::Right);
        ClockReading {
            left: face(self.left_ms),
            right: face(self.right_ms),
            running: self.running.is_some(),
            right_side_up: right,
            left_turn: !right,
            right_turn: right,
            battery_low: false,
        }
    }

    fn owner(&self, side: ClockSide) -> Color {
        if side == self.white {
            Color::White
        } else {
            Color::Black
        }
    }
}

/// The shared rig (engine, time, events, the position on the board) with this file's DGT 3000
/// in increment mode and the truth about it.
struct ClockedRig {
    core: Rig,
    clock: Clock,
    /// For every clock event: (the colour the core says runs, the colour that truly runs).
    named: Vec<(Option<Color>, Option<Color>)>,
    /// For every press: the mover's face time in the press reading (seconds).
    presses: Vec<u32>,
}

impl ClockedRig {
    fn new(white: ClockSide, cfg: EngineConfig) -> ClockedRig {
        let mut rig = ClockedRig {
            core: Rig::configured(cfg),
            clock: Clock {
                left_ms: 300_000,
                right_ms: 300_000,
                running: None,
                white,
            },
            named: vec![],
            presses: vec![],
        };
        rig.send_clock();
        rig.dump_pos();
        rig
    }

    /// The board dumps the position on it, now.
    fn dump_pos(&mut self) {
        let fields = fields_of(self.core.pos.board(), self.core.orientation);
        self.handle(Observation::BoardDump(Box::new(fields)));
    }

    fn handle(&mut self, obs: Observation) {
        let start = self.core.events.len();
        self.core.observe(&obs);
        let truth = self.clock.running.map(|s| self.clock.owner(s));
        for e in &self.core.events[start..] {
            if let EventKind::Clock { running, .. } = e.kind {
                let named = running;
                self.named.push((named, truth));
            }
        }
    }

    fn send_clock(&mut self) {
        let r = self.clock.reading();
        self.handle(Observation::Clock(r));
    }

    /// Time passes; the clock sends a reading each second while it runs.
    fn wait(&mut self, us: Micros) {
        let end = self.core.t + us;
        while self.core.t + S <= end {
            self.core.t += S;
            match self.clock.running {
                Some(ClockSide::Left) => self.clock.left_ms -= 1000,
                Some(ClockSide::Right) => self.clock.right_ms -= 1000,
                None => {}
            }
            if self.clock.running.is_some() {
                self.send_clock();
            }
        }
        self.core.t = end;
        self.core.tick();
    }

    /// The arbiter starts the clock with `side` running.
    fn start_clock(&mut self, side: ClockSide) {
        self.clock.running = Some(side);
        self.send_clock();
    }

    /// The lever pressed on `side`: only does something when that side's face runs.
    fn press(&mut self, side: ClockSide) {
        if self.clock.running != Some(side) {
            return;
        }
        match side {
            ClockSide::Left => self.clock.left_ms += 10_000,
            ClockSide::Right => self.clock.right_ms += 10_000,
        }
        let other = match side {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        };
        self.clock.running = Some(other);
        let shown = match side {
            ClockSide::Left => self.clock.left_ms,
            ClockSide::Right => self.clock.right_ms,
        };
        self.presses.push((shown / 1000) as u32);
        self.send_clock();
        self.wait(300_000);
    }

    fn face_of(&self, color: Color) -> ClockSide {
        if color == Color::White {
            self.clock.white
        } else {
            match self.clock.white {
                ClockSide::Left => ClockSide::Right,
                ClockSide::Right => ClockSide::Left,
            }
        }
    }

    /// The side to move plays `san` by hand: lifts, then placements.
    fn play(&mut self, san: &str) {
        let m = san
            .parse::<San>()
            .expect("SAN")
            .to_move(&self.core.pos)
            .expect("legal");
        let before = self.core.pos.board().clone();
        self.core.pos.play_unchecked(m);
        let after = self.core.pos.board().clone();
        let changed: Vec<Square> = Square::ALL
            .into_iter()
            .filter(|&sq| before.piece_at(sq) != after.piece_at(sq))
            .collect();
        for &sq in changed.iter().filter(|&&sq| before.piece_at(sq).is_some()) {
            self.core.t += 150_000;
            self.handle(self.core.report(sq, SquareReading::Empty));
        }
        for &sq in changed.iter().filter(|&&sq| after.piece_at(sq).is_some()) {
            self.core.t += 150_000;
            let piece = after.piece_at(sq).expect("piece");
            self.handle(self.core.report(sq, SquareReading::Piece(piece)));
        }
    }

    /// The side to move thinks, plays and presses its own side.
    fn turn(&mut self, san: &str, think: Micros) {
        let mover = self.core.pos.turn();
        self.wait(think);
        self.play(san);
        self.wait(300_000);
        let face = self.face_of(mover);
        self.press(face);
    }

    fn finish(&mut self) {
        self.core.finish();
    }

    /// Clock events that named the running colour wrongly, from event `from` on.
    fn wrongly_named(&self, from: usize) -> usize {
        self.named[from..]
            .iter()
            .filter(|(named, truth)| named != truth)
            .count()
    }

    /// `[%clk]` of the moves completed by a press, in order, as (ply, seconds).
    fn clocks_of_pressed_moves(&self) -> Vec<(u32, u32)> {
        self.core
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::MoveCompleted {
                    ply,
                    by: CompletedBy::Clock,
                    clock: Some(c),
                    ..
                } => {
                    let mover = if ply % 2 == 1 { c.white } else { c.black };
                    Some((*ply, mover / 1000))
                }
                _ => None,
            })
            .collect()
    }

    fn sans(&self) -> Vec<String> {
        self.core.sans()
    }
}

const GAME: [&str; 20] = [
    "e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5", "Bb3", "d6",
    "c3", "O-O", "h3", "Nb8", "d4", "Nbd7",
];

/// Thinking times that vary a little, in µs.
fn think(i: usize) -> Micros {
    (2 + (i * 7 % 9) as i64) * S
}

fn play_rest(rig: &mut ClockedRig, from: usize) {
    for (i, san) in GAME.iter().enumerate().skip(from) {
        rig.turn(san, think(i));
    }
    rig.finish();
}

#[test]
fn an_ordinary_game_names_every_clock_right_on_either_side() {
    for white in [ClockSide::Left, ClockSide::Right] {
        let mut rig = ClockedRig::new(white, EngineConfig::default());
        rig.start_clock(white);
        play_rest(&mut rig, 0);
        assert_eq!(rig.sans(), GAME.to_vec());
        assert_eq!(rig.wrongly_named(0), 0, "{white:?}");
        let clk = rig.clocks_of_pressed_moves();
        assert_eq!(clk.len(), GAME.len(), "every move completed by its press");
        let want: Vec<u32> = rig.presses.clone();
        let got: Vec<u32> = clk.iter().map(|c| c.1).collect();
        assert_eq!(got, want, "[%clk] = the mover's face right after the press");
    }
}

#[test]
fn white_forgets_the_first_press_and_black_replies_first() {
    for white in [ClockSide::Left, ClockSide::Right] {
        let mut rig = ClockedRig::new(white, EngineConfig::default());
        rig.start_clock(white);
        // White plays e4 and forgets the clock; Black replies while White's face runs; then
        // White notices and presses.
        rig.wait(4 * S);
        rig.play("e4");
        rig.wait(6 * S);
        rig.play("e5");
        rig.wait(2 * S);
        let face = rig.face_of(Color::White);
        rig.press(face);
        // Black's face now runs while White is to move; White plays Nf3 (its press does
        // nothing: its side is down), Black plays Nc6 and presses: in phase from there.
        rig.wait(5 * S);
        rig.play("Nf3");
        rig.press(face);
        rig.wait(4 * S);
        rig.play("Nc6");
        let black = rig.face_of(Color::Black);
        rig.press(black);
        let in_phase = rig.named.len();
        play_rest(&mut rig, 4);
        assert_eq!(rig.sans(), GAME.to_vec());
        assert!(in_phase < rig.named.len());
        assert_eq!(
            rig.wrongly_named(0),
            0,
            "{white:?}: no guess from the late press; once in phase, every clock event names \
             the colour whose time runs"
        );
        // The late first press never swapped the colours: the running colour is named right
        // wherever the clock ran for the colour to move.
        let clk = rig.clocks_of_pressed_moves();
        let tail: Vec<u32> = clk.iter().filter(|c| c.0 > 4).map(|c| c.1).collect();
        let want: Vec<u32> = rig.presses[rig.presses.len() - tail.len()..].to_vec();
        assert_eq!(tail, want, "{white:?}");
    }
}

#[test]
fn a_first_press_from_the_wrong_side_does_not_swap_the_colours() {
    for white in [ClockSide::Left, ClockSide::Right] {
        let mut rig = ClockedRig::new(white, EngineConfig::default());
        let black = rig.face_of(Color::Black);
        // The arbiter starts the clock on Black's face; Black presses to hand it to White.
        rig.start_clock(black);
        rig.wait(3 * S);
        rig.press(black);
        play_rest(&mut rig, 0);
        assert_eq!(rig.sans(), GAME.to_vec());
        // After White's first in-phase press everything is named right.
        let total = rig.named.len();
        let wrong = rig.wrongly_named(0);
        assert!(
            wrong * 50 < total,
            "{white:?}: {wrong} of {total} clock events named wrongly"
        );
        let clk = rig.clocks_of_pressed_moves();
        let want = &rig.presses[rig.presses.len() - clk.len()..];
        let got: Vec<u32> = clk.iter().map(|c| c.1).collect();
        assert_eq!(got, want, "{white:?}");
    }
}

#[test]
fn the_clock_turned_round_between_games_is_relearned() {
    let mut rig = ClockedRig::new(ClockSide::Left, EngineConfig::default());
    rig.start_clock(ClockSide::Left);
    play_rest(&mut rig, 0);
    assert_eq!(rig.wrongly_named(0), 0);
    // Between games: the clock paused, the pieces set up again, the clock turned round.
    rig.clock.running = None;
    rig.send_clock();
    rig.core.pos = Chess::default();
    rig.dump_pos();
    assert_eq!(rig.core.engine.games().len(), 2, "a second game");
    rig.clock.white = ClockSide::Right;
    rig.clock.left_ms = 300_000;
    rig.clock.right_ms = 300_000;
    let from = rig.named.len();
    rig.start_clock(ClockSide::Right);
    play_rest(&mut rig, 0);
    assert_eq!(rig.sans(), GAME.to_vec());
    assert_eq!(rig.wrongly_named(from), 0);
}

#[test]
fn a_configured_side_always_wins() {
    // Configured: White on the right. The players (wrongly) play with White on the left.
    let cfg = EngineConfig {
        white_clock_side: Some(ClockSide::Right),
        ..Default::default()
    };
    let mut rig = ClockedRig::new(ClockSide::Left, cfg);
    rig.start_clock(ClockSide::Left);
    play_rest(&mut rig, 0);
    assert_eq!(rig.sans(), GAME.to_vec());
    let total = rig.named.len();
    assert_eq!(
        rig.wrongly_named(0),
        total,
        "every clock event follows the configuration, not the evidence"
    );
}

// ---------------------------------------------------------------------------------------------
// Flags as the clock means them (hours byte D4: final flag; D6: flag shown).

impl ClockedRig {
    /// The clock reports a flag on `side`: final (stopped at zero) or only shown.
    fn flag(&mut self, side: ClockSide, final_flag: bool) {
        let mut r = self.clock.reading();
        let face = match side {
            ClockSide::Left => &mut r.left,
            ClockSide::Right => &mut r.right,
        };
        if final_flag {
            face.millis = 0;
            face.flag = true;
        } else {
            face.flag_shown = true;
        }
        self.core.t += 100_000;
        self.handle(Observation::Clock(r));
    }

    fn ended(&self) -> Vec<(&'static str, String)> {
        self.core
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::GameEnded { result, reason } => {
                    Some((result.as_str(), format!("{reason:?}")))
                }
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_flag_shown_is_reported_and_the_game_goes_on() {
    let mut rig = ClockedRig::new(ClockSide::Right, EngineConfig::default());
    rig.start_clock(ClockSide::Right);
    for (i, san) in GAME.iter().enumerate().take(6) {
        rig.turn(san, think(i));
    }
    rig.flag(ClockSide::Right, false);
    let shown: Vec<(Option<&str>, ClockSide)> = rig
        .core
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::FlagShown { player, side } => {
                Some((player.map(eboardd::core::vocab::color_name), side))
            }
            _ => None,
        })
        .collect();
    assert_eq!(shown, vec![(Some("white"), ClockSide::Right)]);
    assert!(rig.ended().is_empty(), "a flag shown is no result");
    for (i, san) in GAME.iter().enumerate().skip(6) {
        rig.turn(san, think(i));
    }
    rig.finish();
    assert_eq!(rig.sans(), GAME.to_vec());
}

#[test]
fn the_final_flag_ends_the_game_for_the_right_colour() {
    for white in [ClockSide::Left, ClockSide::Right] {
        let mut rig = ClockedRig::new(white, EngineConfig::default());
        rig.start_clock(white);
        for (i, san) in GAME.iter().enumerate().take(7) {
            rig.turn(san, think(i));
        }
        // Black to move; Black's face runs out.
        let black = rig.face_of(Color::Black);
        rig.flag(black, true);
        assert_eq!(rig.ended(), vec![("1-0", "Flag".to_string())], "{white:?}");
    }
}

#[test]
fn checkmate_before_the_flag_stands_even_within_the_settle_window() {
    let mut rig = ClockedRig::new(ClockSide::Left, EngineConfig::default());
    rig.start_clock(ClockSide::Left);
    rig.turn("f3", 3 * S);
    rig.turn("e5", 3 * S);
    rig.turn("g4", 3 * S);
    rig.wait(3 * S);
    rig.play("Qh4#");
    // Black's face reaches zero right after the mating move, before Black could press.
    rig.flag(ClockSide::Right, true);
    rig.finish();
    assert_eq!(rig.ended(), vec![("0-1", "Checkmate".to_string())]);
}
