//! The core state machine fed observations directly: scenarios of how people move pieces.

mod support;

use eboardd::core::engine::EngineConfig;
use eboardd::core::event::{CompletedBy, EventKind};
use eboardd::core::observation::{ClockFace, ClockReading, Observation};
use eboardd::core::sensed::Orientation;
use eboardd::core::start;
use shakmaty::{Board, Role, Square};
use support::rig::{MS, Rig, black, white};

fn clock(left_turn: bool, left_ms: u32, right_ms: u32) -> ClockReading {
    ClockReading {
        left: ClockFace {
            millis: left_ms,
            flag: false,
            flag_shown: false,
        },
        right: ClockFace {
            millis: right_ms,
            flag: false,
            flag_shown: false,
        },
        running: true,
        right_side_up: !left_turn,
        left_turn,
        right_turn: !left_turn,
        battery_low: false,
    }
}

/// The shared rig with observations 10 ms apart.
impl Rig {
    fn new(board: &Board) -> Rig {
        Rig::with(board, Orientation::Normal)
    }

    fn with(board: &Board, orientation: Orientation) -> Rig {
        Rig::configured(EngineConfig::default())
            .every(10 * MS)
            .turned(orientation)
            .showing(board)
    }

    fn kinds(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| !matches!(e.kind, EventKind::Clock { .. }))
            .map(|e| match &e.kind {
                EventKind::MoveMade { san, .. } => format!("made {san}"),
                EventKind::MoveRetracted { ply } => format!("retracted {ply}"),
                EventKind::MoveCompleted { san, by, .. } => format!("completed {san} {by:?}"),
                EventKind::GameStarted { chess960, .. } => format!("started {chess960:?}"),
                EventKind::GameEnded { result, reason } => format!("ended {result} {reason:?}"),
                EventKind::Irregularity { code, .. } => format!("irregularity {code}"),
                other => format!("{other:?}"),
            })
            .collect()
    }
}

#[test]
fn start_position_starts_a_standard_game() {
    let rig = Rig::new(&Board::default());
    assert_eq!(rig.kinds(), vec!["started None"]);
}

#[test]
fn pawn_move_in_either_report_order() {
    let mut a = Rig::new(&Board::default());
    a.lift(Square::E2);
    a.place(Square::E4, white(Role::Pawn));
    let mut b = Rig::new(&Board::default());
    b.place(Square::E4, white(Role::Pawn));
    b.lift(Square::E2);
    assert_eq!(a.kinds(), vec!["started None", "made e4"]);
    assert_eq!(b.kinds(), a.kinds());
}

#[test]
fn clock_press_completes_after_settling() {
    let mut rig = Rig::new(&Board::default());
    rig.feed(Observation::Clock(clock(true, 300_000, 300_000)));
    rig.lift(Square::E2);
    rig.place(Square::E4, white(Role::Pawn));
    rig.feed(Observation::Clock(clock(false, 299_000, 300_000)));
    assert!(!rig.kinds().iter().any(|k| k.starts_with("completed")));
    rig.wait(500);
    assert_eq!(
        rig.kinds(),
        vec!["started None", "made e4", "completed e4 Clock"]
    );
    let last = rig.engine.games()[0].moves[0].clone();
    assert_eq!(last.completed, Some(CompletedBy::Clock));
    assert_eq!(last.clock.map(|c| c.white), Some(299_000));
}

#[test]
fn press_reported_before_the_last_field_update() {
    let mut rig = Rig::new(&Board::default());
    rig.feed(Observation::Clock(clock(true, 300_000, 300_000)));
    rig.place(Square::E4, white(Role::Pawn));
    rig.feed(Observation::Clock(clock(false, 299_000, 300_000)));
    rig.lift(Square::E2);
    rig.wait(500);
    assert_eq!(
        rig.kinds(),
        vec!["started None", "made e4", "completed e4 Clock"]
    );
}

#[test]
fn opponent_move_completes_the_previous_one() {
    let mut rig = Rig::new(&Board::default());
    rig.lift(Square::E2);
    rig.place(Square::E4, white(Role::Pawn));
    rig.lift(Square::E7);
    rig.place(Square::E5, black(Role::Pawn));
    assert_eq!(
        rig.kinds(),
        vec![
            "started None",
            "made e4",
            "completed e4 NextMove",
            "made e5"
        ]
    );
}

fn play(rig: &mut Rig, moves: &[(Square, Square)]) {
    for &(from, to) in moves {
        let piece = rig.piece(from);
        rig.lift(from);
        rig.place(to, piece);
    }
}

#[test]
fn rook_first_castling_is_revised_to_castling() {
    let mut rig = Rig::new(&Board::default());
    use Square::*;
    play(
        &mut rig,
        &[(E2, E4), (E7, E5), (G1, F3), (B8, C6), (F1, C4), (G8, F6)],
    );
    rig.lift(H1);
    rig.place(F1, white(Role::Rook));
    rig.lift(E1);
    rig.place(G1, white(Role::King));
    let kinds = rig.kinds();
    let tail: Vec<_> = kinds.iter().rev().take(3).rev().cloned().collect();
    assert_eq!(tail, vec!["made Rf1", "retracted 7", "made O-O"]);
    assert_eq!(rig.sans().last().unwrap(), "O-O");
}

#[test]
fn capture_by_direct_replacement_and_victim_first() {
    use Square::*;
    for victim_first in [false, true] {
        let mut rig = Rig::new(&Board::default());
        play(&mut rig, &[(E2, E4), (D7, D5)]);
        if victim_first {
            rig.lift(D5);
            rig.lift(E4);
        } else {
            rig.lift(E4);
        }
        rig.place(D5, white(Role::Pawn));
        assert_eq!(rig.sans(), vec!["e4", "d5", "exd5"]);
    }
}

#[test]
fn slide_through_squares_is_revised() {
    use Square::*;
    let mut rig = Rig::new(&Board::default());
    play(&mut rig, &[(A2, A4), (H7, H6)]);
    rig.lift(A1);
    rig.place(A2, white(Role::Rook));
    rig.lift(A2);
    rig.place(A3, white(Role::Rook));
    assert_eq!(rig.sans(), vec!["a4", "h6", "Ra3"]);
}

#[test]
fn underpromotion_after_pawn_on_last_rank() {
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess, Position};
    let pos: Chess = "4k3/1P6/8/8/8/8/8/4K3 w - - 0 1"
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    let mut rig = Rig::new(&Board::default());
    rig.engine.handle(
        rig.t + 1,
        &Observation::Operator(eboardd::core::observation::OperatorAction::NewGame {
            fen: Some("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1".into()),
        }),
        &mut rig.events,
    );
    rig.dump(pos.board());
    rig.lift(Square::B7);
    rig.place(Square::B8, white(Role::Pawn));
    rig.lift(Square::B8);
    rig.place(Square::B8, white(Role::Knight));
    assert_eq!(rig.sans(), vec!["b8=N"]);
}

#[test]
fn sensor_glitch_raises_nothing() {
    let mut rig = Rig::new(&Board::default());
    rig.lift(Square::D2);
    rig.place(Square::D2, white(Role::Pawn));
    assert_eq!(rig.kinds(), vec!["started None"]);
}

#[test]
fn reversed_board_is_detected_and_mapped() {
    let mut rig = Rig::with(&Board::default(), Orientation::Reversed);
    rig.lift(Square::E2);
    rig.place(Square::E4, white(Role::Pawn));
    assert_eq!(
        rig.kinds(),
        vec!["started None", "irregularity board_reversed", "made e4"]
    );
}

#[test]
fn chess960_rook_only_castling_with_or_without_king_touched() {
    // King already on g1, rook h1, f1 empty: O-O is rook-only (the rook jumps the king), with
    // or without the king lifted and put back as Guideline II.3.2.5.1 recommends.
    let fen = "4k3/8/8/8/8/8/8/4N1KR w H - 0 1";
    for touch_king in [false, true] {
        let mut rig = Rig::new(&Board::default());
        rig.engine.handle(
            rig.t + 1,
            &Observation::Operator(eboardd::core::observation::OperatorAction::NewGame {
                fen: Some(fen.into()),
            }),
            &mut rig.events,
        );
        let pos: shakmaty::Chess = fen
            .parse::<shakmaty::fen::Fen>()
            .unwrap()
            .into_position(shakmaty::CastlingMode::Chess960)
            .unwrap();
        use shakmaty::Position;
        rig.dump(pos.board());
        rig.lift(Square::H1);
        rig.place(Square::F1, white(Role::Rook));
        if touch_king {
            rig.lift(Square::G1);
            rig.place(Square::G1, white(Role::King));
        }
        assert_eq!(rig.sans(), vec!["O-O"], "touch_king={touch_king}");
    }
}

#[test]
fn chess960_numbers_are_reported() {
    let rig = Rig::new(&start::board_of(0));
    assert_eq!(rig.kinds(), vec!["started Some(0)"]);
}

#[test]
fn fivefold_ends_the_game_and_moves_played_on_are_still_recorded() {
    use Square::*;
    let mut rig = Rig::new(&Board::default());
    let shuffle = [(G1, F3), (G8, F6), (F3, G1), (F6, G8)];
    for _ in 0..4 {
        play(&mut rig, &shuffle);
    }
    play(&mut rig, &[(E2, E4)]);
    rig.wait(1000);
    let kinds = rig.kinds();
    assert!(
        kinds.contains(&"ended 1/2-1/2 Fivefold".to_string()),
        "{kinds:?}"
    );
    let game = &rig.engine.games()[0];
    assert_eq!(game.moves.len(), 17, "the move played on is recorded");
    assert_eq!(game.moves.last().unwrap().san, "e4");
    assert_eq!(
        kinds.iter().filter(|k| k.starts_with("ended")).count(),
        1,
        "one game end only"
    );
}

#[test]
fn setup_position_on_a_turned_board_starts_with_the_side_that_moves_first() {
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess, Position};
    let pos: Chess = "r1b2k2/pp2q1b1/2pp3r/4pp2/2B1P3/2N3Q1/PPP2PPP/3R1RK1 w - - 0 17"
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    for orientation in [Orientation::Normal, Orientation::Reversed] {
        let mut rig = Rig::with(pos.board(), orientation);
        rig.t += 3_000_000;
        rig.lift(Square::F2);
        rig.place(Square::F4, white(Role::Pawn));
        let mut want = vec!["started None".to_string()];
        if orientation == Orientation::Reversed {
            want.push("irregularity board_reversed".into());
        }
        want.push("made f4".into());
        assert_eq!(rig.kinds(), want, "{orientation:?}");
    }
}
