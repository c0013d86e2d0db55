//! The last messy situations at a tournament board, as they happen (the shared rig): a jolted
//! board, a touch seen before the link dropped, a set-up corrected before the clock starts,
//! result signals with the kings in either order. Each must give exactly what an arbiter needs:
//! the moves, the result, and no report where nothing happened.

mod support;

use eboardd::core::event::EndReason;
use eboardd::core::observation::{Observation, SquareReading};
use shakmaty::{Board, Chess, Color, Position, Role, Square, Square::*};
use support::rig::*;

fn game_board() -> Chess {
    after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"])
}

#[test]
fn a_board_that_reads_empty_for_about_a_second_raises_nothing() {
    // Lifted or jolted, or a power glitch: an empty dump, then the full one. No hand holds 32
    // pieces, and nothing changed on the board: no report, no new game.
    for empty_ms in [300, 700, 1000, 1300, 1800] {
        let mut rig = open_game();
        rig.wait(1000);
        rig.dump(&Board::empty());
        rig.wait(empty_ms);
        rig.dump(game_board().board());
        rig.wait(1500);
        rig.mv(F1, C4);
        rig.press();
        assert_eq!(
            rig.irregularities(),
            vec![],
            "{empty_ms} ms:\n{}",
            rig.log()
        );
        assert_eq!(rig.engine.games().len(), 1, "{empty_ms} ms:\n{}", rig.log());
        assert_eq!(rig.sans().last().unwrap(), "Bc4");
    }
}

#[test]
fn a_board_that_reads_empty_field_by_field_for_a_second_raises_nothing() {
    // The same jolt reported square by square, as a scanning board sends it.
    let mut rig = open_game();
    let board = game_board().board().clone();
    let squares: Vec<Square> = board.occupied().into_iter().collect();
    rig.wait(1000);
    for &sq in &squares {
        rig.field_after(2, sq, SquareReading::Empty);
    }
    rig.wait(1000);
    for &sq in &squares {
        rig.field_after(2, sq, SquareReading::Piece(board.piece_at(sq).unwrap()));
    }
    rig.wait(1500);
    rig.mv(D2, D4);
    rig.press();
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    assert_eq!(rig.sans().last().unwrap(), "d4");
}

#[test]
fn a_start_position_that_reads_empty_for_a_second_is_no_new_game() {
    let mut rig = Rig::standard();
    rig.wait(2000);
    rig.dump(&Board::empty());
    rig.wait(1000);
    rig.dump(&Board::default());
    rig.wait(1500);
    rig.mv(E2, E4);
    rig.press();
    rig.wait(1000);
    rig.dump(&Board::empty());
    rig.wait(900);
    rig.dump(after(&Chess::default(), &["e4"]).board());
    rig.wait(1500);
    rig.mv(E7, E5);
    rig.press();
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"]);
}

#[test]
fn a_touch_seen_before_a_link_drop_counts_when_the_touched_piece_could_move() {
    // White lifts the f1 bishop (it can move: Bc4, Bb5...); the link drops while it is up. The
    // dump after reconnecting shows it home and d2-d4 made: 4.3a, the bishop had to move. The
    // a1 rook, touched alike, cannot move: d4 is free.
    for (touched, breaks) in [(F1, true), (A1, false)] {
        let mut rig = open_game();
        rig.wait(1500);
        rig.lift(touched);
        rig.wait(900);
        rig.feed(Observation::Disconnected {
            driver: "dgt".into(),
            serial: None,
        });
        rig.wait(4000);
        let now = after(&game_board(), &["d4"]);
        rig.dump(now.board());
        rig.press();
        let want = if breaks {
            vec![("touched_piece_not_moved", 5)]
        } else {
            vec![]
        };
        assert_eq!(rig.irregularities(), want, "{touched}:\n{}", rig.log());
        assert_eq!(rig.sans().last().unwrap(), "d4", "{touched}");
    }
}

#[test]
fn a_set_up_corrected_before_the_clock_starts_is_one_standard_game() {
    // The board is switched on empty and set up; the b1 knight first goes to a3 (1. Na3 from
    // the start position, to a machine) and is then moved to b1, its right square. Then the
    // clock starts and the game begins.
    for (wrong, right) in [(A3, B1), (C6, B8), (E3, E2)] {
        let mut rig = Rig::bare(&Board::empty());
        let start = Board::default();
        for sq in start.occupied() {
            let piece = start.piece_at(sq).unwrap();
            rig.wait(150);
            rig.place(if sq == right { wrong } else { sq }, piece);
        }
        rig.wait(4000);
        let piece = start.piece_at(right).unwrap();
        rig.lift(wrong);
        rig.wait(400);
        rig.place(right, piece);
        rig.wait(3000);
        rig.clock();
        rig.wait(2000);
        rig.mv(D2, D4);
        rig.press();
        rig.mv(D7, D5);
        rig.press();
        assert_eq!(rig.irregularities(), vec![], "{wrong}:\n{}", rig.log());
        assert_eq!(rig.engine.games().len(), 1, "{wrong}:\n{}", rig.log());
        let g = &rig.engine.games()[0];
        assert_eq!(g.start().board(), Chess::default().board(), "{wrong}");
        assert_eq!(rig.sans(), ["d4", "d5"], "{wrong}:\n{}", rig.log());
    }
}

#[test]
fn result_signals_with_the_kings_in_either_order_are_the_result_and_nothing_else() {
    // Both kings on dark centre squares: Black wins. The loser's king may come first, or the
    // winner's; seconds apart; with either side to move.
    for (first_white, to_move_white, gap_ms) in [
        (true, true, 3000),
        (true, false, 5000),
        (false, true, 3000),
        (false, false, 6000),
    ] {
        let mut rig = Rig::from_fen("4k3/pp6/8/8/8/8/PP6/4K3 w - - 0 1");
        rig.play(&[(A2, A3), (A7, A6)]);
        if !to_move_white {
            rig.play(&[(B2, B3)]);
        }
        let kings = [(E1, D4, white(Role::King)), (E8, E5, black(Role::King))];
        let order = if first_white {
            [kings[0], kings[1]]
        } else {
            [kings[1], kings[0]]
        };
        rig.wait(1500);
        for (i, (from, to, king)) in order.into_iter().enumerate() {
            if i == 1 {
                rig.wait(gap_ms);
            }
            rig.lift(from);
            rig.wait(300);
            rig.place(to, king);
        }
        rig.wait(2000);
        let what = format!("white first {first_white}, white to move {to_move_white}");
        assert_eq!(
            rig.ended(),
            Some(("0-1", EndReason::KingsSignal)),
            "{what}:\n{}",
            rig.log()
        );
        assert_eq!(rig.irregularities(), vec![], "{what}:\n{}", rig.log());
        let moves = if to_move_white { 2 } else { 3 };
        assert_eq!(rig.sans().len(), moves, "{what}:\n{}", rig.log());
    }
}

#[test]
fn a_piece_knocked_onto_a_legal_square_of_its_player_as_the_move_is_released_is_displaced() {
    // White plays Bc4; the hand that lets go of the bishop knocks Black's a7 pawn to a6 (a
    // legal move of Black's) and puts it back two seconds later; White presses; Black plays
    // d6. The pawn never made a move: 7.4, displaced in White's turn, and no 4.6 for Black.
    for (press_first, knock_ms) in [(false, 100), (false, 0), (true, 150)] {
        let mut rig = open_game();
        rig.wait(2000);
        rig.lift(F1);
        rig.wait(400);
        rig.field_after(60, C4, SquareReading::Piece(white(Role::Bishop)));
        rig.field_after(knock_ms.max(1), A7, SquareReading::Empty);
        rig.field_after(150, A6, SquareReading::Piece(black(Role::Pawn)));
        if press_first {
            rig.press();
        }
        rig.wait(2000);
        rig.lift(A6);
        rig.wait(400);
        rig.place(A7, black(Role::Pawn));
        if !press_first {
            rig.press();
        }
        rig.wait(2000);
        rig.mv(D7, D6);
        rig.press();
        let what = format!("press first {press_first}, knocked {knock_ms} ms after");
        assert_eq!(
            rig.irregularities(),
            vec![("displaced_pieces", 5)],
            "{what}:\n{}",
            rig.log()
        );
        assert_eq!(rig.sans()[4..], ["Bc4", "d6"], "{what}:\n{}", rig.log());
    }
}

#[test]
fn a_set_up_corrected_while_the_board_is_still_being_filled_is_no_game() {
    // The first set-up of the day on an empty board: one side is set up with a piece on a wrong
    // square, then a piece or two of the other side; the arbiter looks (the board stands still
    // for seconds), puts the piece right (a legal move from that position, to a machine), then
    // sets up the rest. The clock starts and the game is played from the start position: one
    // game, no move before it, nothing displaced.
    let start = Board::default();
    // (the side set up first, its piece's wrong square and right square, the other side's
    // pieces placed before the look)
    let cases: [(Color, Square, Square, &[Square]); 4] = [
        (Color::White, F3, G1, &[E8]),
        (Color::White, E3, E2, &[E8, D8]),
        (Color::Black, C6, B8, &[E1]),
        (Color::White, A3, B1, &[E8, A7, B7]),
    ];
    for (first, wrong, right, others) in cases {
        let what = format!("{first:?} {wrong}->{right} with {others:?}");
        let mut rig = Rig::bare(&Board::empty());
        for sq in start.by_color(first) {
            rig.wait(150);
            rig.place(
                if sq == right { wrong } else { sq },
                start.piece_at(sq).unwrap(),
            );
        }
        for &sq in others {
            rig.wait(300);
            rig.place(sq, start.piece_at(sq).unwrap());
        }
        rig.wait(3000);
        let piece = start.piece_at(right).unwrap();
        rig.lift(wrong);
        rig.wait(500);
        rig.place(right, piece);
        rig.wait(1500);
        for sq in start.by_color(!first) {
            if !others.contains(&sq) {
                rig.wait(150);
                rig.place(sq, start.piece_at(sq).unwrap());
            }
        }
        rig.wait(3000);
        rig.clock();
        rig.wait(2000);
        rig.mv(E2, E4);
        rig.press();
        rig.mv(E7, E5);
        rig.press();
        assert_eq!(rig.irregularities(), vec![], "{what}:\n{}", rig.log());
        assert_eq!(rig.engine.games().len(), 1, "{what}:\n{}", rig.log());
        let g = &rig.engine.games()[0];
        assert_eq!(g.start().board(), Chess::default().board(), "{what}");
        assert_eq!(rig.sans(), ["e4", "e5"], "{what}:\n{}", rig.log());
    }
}
