//! The messy board (issue 10): set-up mistakes, knocked pieces, link gaps, touch-move in full,
//! the Laws' counts, results in the right order, arbiter restorations. Hand-made situations fed
//! as timed observations straight into a [`BoardEngine`], as `tests/irregularities.rs` does.

use eboardd::core::event::{EndReason, EventKind};
use eboardd::core::observation::{Observation, OperatorAction, SquareReading};
use eboardd::core::start;
use shakmaty::{Board, Chess, Color, Position, Role, Square};

mod support;

use Square::*;
use support::rig::*;

/// Set every square of the board to `target`, one field at a time, 150 ms apart, in the given
/// square order (pieces lifted first, then placed).
fn set_board(rig: &mut Rig, target: &Board, order: &[Square]) {
    for &sq in order {
        rig.field_after(150, sq, SquareReading::Empty);
    }
    for &sq in order {
        if let Some(p) = target.piece_at(sq) {
            rig.field_after(150, sq, SquareReading::Piece(p));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Set-up is not play

#[test]
fn pieces_swapped_and_swapped_back_before_the_first_move_raise_nothing() {
    let mut rig = Rig::standard();
    // Knight and bishop swapped on the queen's side, left so for 3 s, then put right.
    rig.lift(B1);
    rig.lift(C1);
    rig.place(B1, white(Role::Bishop));
    rig.place(C1, white(Role::Knight));
    rig.wait(3000);
    rig.lift(B1);
    rig.lift(C1);
    rig.place(B1, white(Role::Knight));
    rig.place(C1, white(Role::Bishop));
    rig.wait(1000);
    rig.play(&[(E2, E4), (E7, E5)]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"]);
}

#[test]
fn a_clock_started_while_the_set_up_is_wrong_is_no_illegal_move() {
    let mut rig = Rig::standard();
    rig.lift(B1);
    rig.lift(C1);
    rig.place(B1, white(Role::Bishop));
    rig.place(C1, white(Role::Knight));
    rig.wait(2000);
    // White's lever pressed (the clock started from the wrong side) before anyone moved.
    rig.press();
    rig.wait(2000);
    rig.lift(B1);
    rig.lift(C1);
    rig.place(B1, white(Role::Knight));
    rig.place(C1, white(Role::Bishop));
    rig.wait(1000);
    rig.arbiter_sets_clock_back();
    rig.play(&[(E2, E4), (E7, E5)]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"]);
}

#[test]
fn a_chess960_arrangement_set_up_after_the_standard_one_is_the_game() {
    let mut rig = Rig::standard();
    rig.wait(3000);
    let target = start::board_of(0);
    let order: Vec<Square> = [shakmaty::Rank::First, shakmaty::Rank::Eighth]
        .into_iter()
        .flat_map(|r| shakmaty::File::ALL.map(|f| Square::from_coords(f, r)))
        .collect();
    set_board(&mut rig, &target, &order);
    rig.wait(2000);
    rig.play(&[(E2, E4), (E7, E5)]);
    let game = rig.engine.games().last().expect("a game");
    assert_eq!(game.chess960, Some(0), "{}", rig.log());
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn a_standard_arrangement_put_right_after_a_chess960_one_is_the_game() {
    let mut rig = Rig::bare(&start::board_of(0));
    rig.clock();
    rig.wait(3000);
    let order: Vec<Square> = [shakmaty::Rank::Eighth, shakmaty::Rank::First]
        .into_iter()
        .flat_map(|r| shakmaty::File::ALL.map(|f| Square::from_coords(f, r)))
        .collect();
    set_board(&mut rig, &Board::default(), &order);
    rig.wait(2000);
    rig.play(&[(G1, F3), (G8, F6)]);
    let game = rig.engine.games().last().expect("a game");
    assert_eq!(game.chess960, Some(518), "{}", rig.log());
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["Nf3", "Nf6"]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn white_moving_while_black_still_sets_up_starts_the_standard_game() {
    // The board starts empty; White's army is set, Black's half set (king included) and left so
    // for 3 s; White plays e4; Black finishes.
    let mut rig = Rig::bare(&Board::empty());
    let full = Board::default();
    for (sq, p) in full.iter().filter(|(_, p)| p.color == Color::White) {
        rig.field_after(120, sq, SquareReading::Piece(p));
    }
    let black_first = [E8, D8, A8, H8, A7, B7, C7, D7];
    for sq in black_first {
        rig.field_after(120, sq, SquareReading::Piece(full.piece_at(sq).unwrap()));
    }
    rig.wait(3000);
    rig.lift(E2);
    rig.wait(300);
    rig.place(E4, white(Role::Pawn));
    rig.wait(1500);
    for (sq, p) in full
        .iter()
        .filter(|(sq, p)| p.color == Color::Black && !black_first.contains(sq))
    {
        rig.field_after(200, sq, SquareReading::Piece(p));
    }
    rig.wait(2000);
    rig.clock();
    rig.mv(E7, E5);
    rig.wait(1500);
    let game = rig.engine.games().last().expect("a game");
    assert_eq!(
        game.start_fen(),
        shakmaty::fen::Fen::from_position(&Chess::default(), shakmaty::EnPassantMode::Legal)
            .to_string(),
        "{}",
        rig.log()
    );
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"], "{}", rig.log());
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

/// Fool's mate: 1. f3 e5 2. g4 Qh4#.
fn fools_mate() -> Rig {
    let mut rig = Rig::standard();
    rig.play(&[(F2, F3), (E7, E5), (G2, G4), (D8, H4)]);
    assert_eq!(
        rig.ended(),
        Some(("0-1", EndReason::Checkmate)),
        "{}",
        rig.log()
    );
    rig
}

#[test]
fn a_finished_games_pieces_reset_in_any_order_give_no_moves_and_a_new_game() {
    let mut rig = fools_mate();
    rig.events.clear();
    // Tidy up: the queen goes home via e7 (a legal-looking square), pawns back, in a jumble.
    rig.lift(H4);
    rig.wait(300);
    rig.place(E7, black(Role::Queen));
    rig.wait(800);
    rig.lift(E7);
    rig.wait(300);
    rig.place(D8, black(Role::Queen));
    rig.lift(E5);
    rig.place(E7, black(Role::Pawn));
    rig.lift(G4);
    rig.place(G2, white(Role::Pawn));
    rig.wait(500);
    rig.lift(F3);
    rig.place(F2, white(Role::Pawn));
    rig.wait(2000);
    rig.clock();
    rig.play(&[(E2, E4), (E7, E5)]);
    assert_eq!(rig.engine.games().len(), 2, "{}", rig.log());
    assert_eq!(rig.engine.games()[0].moves.len(), 4, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4", "e5"], "{}", rig.log());
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn tidying_up_after_a_dead_position_records_no_moves_and_raises_nothing() {
    // White's king takes the last black piece: K vs K, a dead position (5.2b).
    let mut rig = Rig::from_fen("8/8/8/4k3/8/8/3p4/4K3 w - - 0 1");
    rig.lift(D2);
    rig.wait(200);
    rig.lift(E1);
    rig.wait(300);
    rig.place(D2, white(Role::King));
    rig.press();
    assert_eq!(
        rig.ended(),
        Some(("1/2-1/2", EndReason::InsufficientMaterial)),
        "{}",
        rig.log()
    );
    // Tidying up: kings taken off, a piece put down elsewhere, presses.
    rig.wait(2000);
    rig.lift(E5);
    rig.wait(1500);
    rig.lift(D2);
    rig.wait(300);
    rig.place(A1, white(Role::Rook));
    rig.wait(1500);
    rig.press();
    rig.wait(3000);
    rig.press();
    rig.wait(3000);
    assert_eq!(rig.sans(), ["Kxd2"], "{}", rig.log());
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

// ---------------------------------------------------------------------------------------------
// 2. Gaps are recovered, not punished

fn recovered_flags(rig: &Rig) -> Vec<bool> {
    let game = rig.engine.games().last().expect("a game");
    game.moves.iter().map(|m| m.recovered).collect()
}

#[test]
fn a_dump_two_plies_ahead_after_a_reconnection_is_recovered() {
    let mut rig = open_game();
    rig.feed(Observation::Disconnected {
        driver: "dgt".into(),
        serial: None,
    });
    rig.wait(5000);
    let ahead = after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"]);
    rig.dump(ahead.board());
    rig.wait(1500);
    assert_eq!(
        rig.sans(),
        ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"],
        "{}",
        rig.log()
    );
    assert_eq!(
        recovered_flags(&rig),
        [false, false, false, false, true, true]
    );
    let recovered_events = rig
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::MoveMade {
                    recovered: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(recovered_events, 2, "{}", rig.log());
    // The game goes on normally from there.
    rig.mv(B5, A4);
    rig.press();
    assert_eq!(rig.sans().last().unwrap(), "Ba4");
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn a_board_four_plies_ahead_is_recovered() {
    let mut rig = Rig::standard();
    rig.wait(2000);
    let ahead = after(&Chess::default(), &["e4", "d5", "exd5", "Qxd5"]);
    rig.dump(ahead.board());
    rig.wait(1500);
    assert_eq!(rig.sans(), ["e4", "d5", "exd5", "Qxd5"], "{}", rig.log());
    assert_eq!(recovered_flags(&rig), [true; 4]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn a_board_that_jumped_two_plies_in_one_scan_is_recovered() {
    // Lost messages: the next reports show Nf3 and Nc6 at once, in an order that never shows
    // either move alone.
    let mut rig = Rig::standard();
    rig.play(&[(E2, E4), (E7, E5)]);
    rig.field_after(600, C6, SquareReading::Piece(black(Role::Knight)));
    rig.field_after(5, F3, SquareReading::Piece(white(Role::Knight)));
    rig.field_after(5, B8, SquareReading::Empty);
    rig.field_after(5, G1, SquareReading::Empty);
    rig.wait(2000);
    assert_eq!(rig.sans(), ["e4", "e5", "Nf3", "Nc6"], "{}", rig.log());
    assert_eq!(recovered_flags(&rig), [false, false, true, true]);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}

#[test]
fn an_ambiguous_gap_is_one_irregularity_and_no_chain_of_illegal_moves() {
    // Three plies ahead: 1. e4 e5 2. Nf3 or 1. Nf3 e5 2. e4 — the board cannot tell.
    let mut rig = Rig::standard();
    rig.wait(2000);
    let ahead = after(&Chess::default(), &["e4", "e5", "Nf3"]);
    rig.dump(ahead.board());
    rig.wait(1500);
    // Play goes on, with presses, nobody having pressed for the missing moves.
    rig.clock.left_turn = false;
    rig.clock();
    rig.mv(B8, C6);
    rig.press();
    rig.mv(F1, B5);
    rig.press();
    rig.mv(A7, A6);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("moves_missing", 1)],
        "{}",
        rig.log()
    );
    let detail = rig.detail("moves_missing").remove(0);
    assert!(
        detail.contains("e4 e5 Nf3") && detail.contains("Nf3 e5 e4"),
        "{detail}"
    );
}

#[test]
fn a_board_that_jumped_three_plies_with_transpositions_is_one_irregularity() {
    // Lost messages, no dump: the reports show e4, e5 and Nf3 at once.
    let mut rig = Rig::standard();
    rig.wait(2000);
    rig.field_after(600, E4, SquareReading::Piece(white(Role::Pawn)));
    rig.field_after(5, E5, SquareReading::Piece(black(Role::Pawn)));
    rig.field_after(5, F3, SquareReading::Piece(white(Role::Knight)));
    rig.field_after(5, E2, SquareReading::Empty);
    rig.field_after(5, E7, SquareReading::Empty);
    rig.field_after(5, G1, SquareReading::Empty);
    rig.wait(2000);
    rig.clock.left_turn = false;
    rig.clock();
    rig.mv(B8, C6);
    rig.press();
    rig.mv(F1, B5);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("moves_missing", 1)],
        "{}",
        rig.log()
    );
    assert!(rig.sans().is_empty(), "{:?}", rig.sans());
}

#[test]
fn a_board_no_legal_sequence_reaches_is_one_irregularity() {
    let mut rig = open_game();
    // After a reconnection both sides' pieces stand where no four legal moves take them.
    let mut board = after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"])
        .board()
        .clone();
    board.discard_piece_at(A2);
    board.set_piece_at(A5, white(Role::Pawn));
    board.discard_piece_at(H7);
    board.set_piece_at(H3, black(Role::Pawn));
    rig.dump(&board);
    rig.wait(1500);
    rig.press();
    rig.wait(2000);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("moves_missing", 5)],
        "{}",
        rig.log()
    );
    // The arbiter sets the recorded position up again: resolved.
    rig.dump(after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"]).board());
    assert_eq!(rig.resolved(), ["moves_missing"], "{}", rig.log());
}

// ---------------------------------------------------------------------------------------------
// 3. Knocks and a lifted board are displaced pieces, not touches

#[test]
fn a_group_knocked_off_in_one_scan_is_displaced_not_touched() {
    let mut rig = open_game();
    // Three white pieces gone in one scan, put back one by one over 3 s; then Bc4.
    rig.field_after(1000, D2, SquareReading::Empty);
    rig.field_after(5, C2, SquareReading::Empty);
    rig.field_after(5, B1, SquareReading::Empty);
    rig.wait(1500);
    rig.place(D2, white(Role::Pawn));
    rig.wait(800);
    rig.place(C2, white(Role::Pawn));
    rig.wait(800);
    rig.place(B1, white(Role::Knight));
    rig.wait(800);
    rig.mv(F1, C4);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("displaced_pieces", 5)],
        "{}",
        rig.log()
    );
    assert_eq!(rig.resolved(), ["displaced_pieces"], "{}", rig.log());
    assert_eq!(rig.sans().last().unwrap(), "Bc4");
}

#[test]
fn two_pieces_knocked_off_together_are_no_touch_for_either_player() {
    let mut rig = open_game();
    // A white and a black piece that no single move lifts together.
    rig.field_after(1000, A2, SquareReading::Empty);
    rig.field_after(5, H7, SquareReading::Empty);
    rig.wait(1400);
    rig.place(A2, white(Role::Pawn));
    rig.wait(500);
    rig.place(H7, black(Role::Pawn));
    rig.wait(500);
    rig.mv(F1, C4);
    rig.press();
    rig.mv(G8, F6);
    rig.press();
    let codes: Vec<_> = rig.irregularities().into_iter().map(|(c, _)| c).collect();
    assert_eq!(codes, ["displaced_pieces"], "{}", rig.log());
}

#[test]
fn a_lifted_board_is_displaced_and_resolved_when_put_down() {
    let mut rig = open_game();
    let game_board = after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"]);
    rig.wait(1000);
    rig.dump(&Board::empty());
    rig.wait(5000);
    rig.dump(game_board.board());
    rig.wait(500);
    rig.mv(F1, C4);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("displaced_pieces", 5)],
        "{}",
        rig.log()
    );
    assert_eq!(rig.resolved(), ["displaced_pieces"], "{}", rig.log());
    assert_eq!(rig.sans().last().unwrap(), "Bc4");
    assert_eq!(rig.engine.games().len(), 1);
}

#[test]
fn a_board_empty_for_seconds_is_displaced_and_for_a_moment_is_not() {
    // A jolt or power glitch reads empty for about a second (tests/messy_trust.rs).
    for (empty_ms, raised) in [(4000, true), (500, false), (120, false)] {
        let mut rig = open_game();
        let game_board = after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"]);
        rig.wait(1000);
        rig.dump(&Board::empty());
        rig.wait(empty_ms);
        rig.dump(game_board.board());
        rig.wait(500);
        rig.mv(F1, C4);
        rig.press();
        let want = if raised {
            vec![("displaced_pieces", 5)]
        } else {
            vec![]
        };
        assert_eq!(rig.irregularities(), want, "{empty_ms} ms:\n{}", rig.log());
        assert_eq!(rig.resolved().len(), want.len(), "{}", rig.log());
        assert_eq!(rig.sans().last().unwrap(), "Bc4");
    }
}

#[test]
fn a_board_empty_field_by_field_is_no_touch_for_anyone() {
    let mut rig = open_game();
    let game_board = after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"]);
    let squares: Vec<Square> = game_board.board().occupied().into_iter().collect();
    rig.wait(1000);
    for &sq in &squares {
        rig.field_after(1, sq, SquareReading::Empty);
    }
    // Long enough to be a lifted board, not a jolt.
    rig.wait(5000);
    for &sq in &squares {
        rig.field_after(
            1,
            sq,
            SquareReading::Piece(game_board.board().piece_at(sq).unwrap()),
        );
    }
    rig.wait(500);
    rig.mv(D2, D4);
    rig.press();
    rig.mv(D7, D6);
    rig.press();
    let codes: Vec<_> = rig.irregularities().into_iter().map(|(c, _)| c).collect();
    assert_eq!(codes, ["displaced_pieces"], "{}", rig.log());
    assert_eq!(rig.resolved(), ["displaced_pieces"], "{}", rig.log());
}

#[test]
fn a_legal_move_pressed_with_a_knocked_piece_still_off_is_that_move_and_displaced() {
    let mut rig = open_game();
    rig.lift(F1);
    rig.wait(200);
    // The hand knocks the g2 pawn off the board on the way.
    rig.lift(G2);
    rig.wait(300);
    rig.place(C4, white(Role::Bishop));
    rig.press();
    assert_eq!(rig.sans().last().unwrap(), "Bc4", "{}", rig.log());
    assert_eq!(
        rig.irregularities(),
        vec![("displaced_pieces", 5)],
        "{}",
        rig.log()
    );
    assert!(rig.detail("illegal_move").is_empty());
    rig.wait(1500);
    rig.place(G2, white(Role::Pawn));
    assert_eq!(rig.resolved(), ["displaced_pieces"], "{}", rig.log());
    rig.mv(G8, F6);
    rig.press();
    assert_eq!(rig.sans().last().unwrap(), "Nf6");
    assert_eq!(rig.irregularities().len(), 1, "{}", rig.log());
}

#[test]
fn a_knocked_pawn_on_a_legal_square_and_a_legal_move_pressed_is_no_illegal_move() {
    // Bf1-c4 made while the g2 pawn is knocked to g3 (where g3 would be legal): the sensors
    // cannot tell which was the move. Displaced, never an illegal move; put right, then Bc4.
    let mut rig = open_game();
    rig.lift(F1);
    rig.field_after(100, G2, SquareReading::Empty);
    rig.field_after(5, G3, SquareReading::Piece(white(Role::Pawn)));
    rig.wait(300);
    rig.place(C4, white(Role::Bishop));
    rig.press();
    assert!(rig.detail("illegal_move").is_empty(), "{}", rig.log());
    assert_eq!(
        rig.irregularities(),
        vec![("displaced_pieces", 5)],
        "{}",
        rig.log()
    );
}

#[test]
fn a_released_piece_knocked_to_a_neighbouring_square_and_put_back_is_displaced() {
    let mut rig = open_game();
    rig.mv(F1, C4);
    rig.wait(1500);
    // Knocked from c4 to b5 (where Bf1 could also have gone) in one scan, put back 1.5 s later.
    rig.field_after(60, C4, SquareReading::Empty);
    rig.field_after(5, B5, SquareReading::Piece(white(Role::Bishop)));
    rig.wait(1500);
    rig.lift(B5);
    rig.wait(300);
    rig.place(C4, white(Role::Bishop));
    rig.press();
    assert_eq!(rig.sans().last().unwrap(), "Bc4");
    assert_eq!(
        rig.irregularities(),
        vec![("displaced_pieces", 5)],
        "{}",
        rig.log()
    );
    assert_eq!(rig.resolved(), ["displaced_pieces"], "{}", rig.log());
}

// ---------------------------------------------------------------------------------------------
// 4. Touch-move, completely

#[test]
fn a_piece_carried_to_a_square_and_back_unreleased_then_another_moved_is_4_3a() {
    let mut rig = open_game();
    rig.lift(F1);
    rig.wait(300);
    rig.place(C4, white(Role::Bishop));
    rig.wait(200);
    rig.lift(C4);
    rig.wait(300);
    rig.place(F1, white(Role::Bishop));
    rig.wait(800);
    rig.mv(D2, D4);
    rig.press();
    assert_eq!(rig.sans().last().unwrap(), "d4");
    assert_eq!(
        rig.irregularities(),
        vec![("touched_piece_not_moved", 5)],
        "{}",
        rig.log()
    );
}

#[test]
fn the_opponent_touching_after_the_move_is_made_before_the_press_is_the_opponents_touch() {
    let mut rig = open_game();
    rig.mv(F1, C4);
    rig.wait(300);
    // Black lifts the g8 knight and puts it back while White has not pressed yet.
    rig.lift(G8);
    rig.wait(800);
    rig.place(G8, black(Role::Knight));
    rig.wait(300);
    rig.press();
    rig.mv(D7, D6);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("touched_piece_not_moved", 6)],
        "{}",
        rig.log()
    );
}

#[test]
fn after_an_illegal_move_a_touch_before_the_replacing_move_is_4_3a() {
    let mut rig = open_game();
    // Bf1-h3 through the g2 pawn: illegal. Restored; the d2 pawn touched; then Bc4.
    rig.mv(F1, H3);
    rig.press();
    rig.lift(H3);
    rig.wait(400);
    rig.place(F1, white(Role::Bishop));
    rig.arbiter_sets_clock_back();
    let pawn = white(Role::Pawn);
    rig.lift(D2);
    rig.wait(800);
    rig.place(D2, pawn);
    rig.wait(500);
    rig.mv(F1, C4);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("illegal_move", 5), ("touched_piece_not_moved", 5)],
        "{}",
        rig.log()
    );
    assert_eq!(rig.resolved(), ["illegal_move"], "{}", rig.log());
}

#[test]
fn after_a_non_capturing_illegal_move_the_piece_moved_must_replace_it_when_it_can() {
    // 7.5.1: "Articles 4.3 and 4.7 apply to the move replacing the illegal move". The bishop
    // went f1-h3 through the g2 pawn (illegal) and is put back: it was touched, and it can move
    // (Bc4, Bb5...). The rook went a1-a3 through the a2 pawn: it was touched but cannot move,
    // so any move may replace it.
    for (from, to, breaks) in [(F1, H3, true), (A1, A3, false)] {
        let mut rig = open_game();
        let piece = rig.piece(from);
        rig.mv(from, to);
        rig.press();
        rig.lift(to);
        rig.wait(400);
        rig.place(from, piece);
        rig.arbiter_sets_clock_back();
        rig.mv(D2, D4);
        rig.press();
        let mut want = vec![("illegal_move", 5)];
        if breaks {
            want.push(("touched_piece_not_moved", 5));
        }
        assert_eq!(rig.irregularities(), want, "{from}-{to}:\n{}", rig.log());
        assert_eq!(rig.sans().last().unwrap(), "d4");
    }
}

#[test]
fn after_an_illegal_move_by_the_same_piece_replaced_legally_nothing_more() {
    let mut rig = open_game();
    rig.mv(F1, H3);
    rig.press();
    rig.lift(H3);
    rig.wait(400);
    rig.place(F1, white(Role::Bishop));
    rig.arbiter_sets_clock_back();
    rig.mv(F1, C4);
    rig.press();
    assert_eq!(
        rig.irregularities(),
        vec![("illegal_move", 5)],
        "{}",
        rig.log()
    );
    assert_eq!(rig.sans().last().unwrap(), "Bc4");
}

#[test]
fn after_an_illegal_capture_the_piece_taken_must_be_captured() {
    // 1. e4 d5: the queen takes d5 through the d2 pawn (illegal); exd5 was possible.
    let mut rig = Rig::standard();
    rig.play(&[(E2, E4), (D7, D5)]);
    rig.lift(D5);
    rig.wait(300);
    rig.lift(D1);
    rig.wait(300);
    rig.place(D5, white(Role::Queen));
    rig.press();
    rig.lift(D5);
    rig.wait(300);
    rig.place(D1, white(Role::Queen));
    rig.wait(300);
    rig.place(D5, black(Role::Pawn));
    rig.arbiter_sets_clock_back();
    rig.mv(G1, F3);
    rig.press();
    let mut got = rig.irregularities();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("illegal_move", 3),
            ("touched_opponent_not_captured", 3),
            ("touched_piece_not_moved", 3)
        ],
        "{}",
        rig.log()
    );
}

// ---------------------------------------------------------------------------------------------
// 5. The Laws' counts (7.5.3 counts 7.5.1, 7.5.2 and 7.8.1 together)

#[test]
fn a_press_without_a_move_then_an_illegal_move_is_the_second_illegal_move() {
    let mut rig = open_game();
    rig.wait(1500);
    rig.press();
    rig.arbiter_sets_clock_back();
    let first = rig.detail("clock_pressed_without_move");
    assert_eq!(first.len(), 1, "{}", rig.log());
    assert!(first[0].contains("warning"), "{}", first[0]);
    rig.mv(F1, H3);
    rig.press();
    let second = rig.detail("illegal_move");
    assert_eq!(second.len(), 1, "{}", rig.log());
    assert!(
        second[0].contains("number 2") && second[0].contains("lost by White"),
        "{}",
        second[0]
    );
}

#[test]
fn an_unpromoted_pawn_then_a_press_without_a_move_is_the_second_and_a_draw_without_mating_material()
{
    // White: king and pawn; Black: bare king. The pawn left on b8 counts as a queen.
    let mut rig = Rig::from_fen("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1");
    rig.mv(B7, B8);
    rig.press();
    let first = rig.detail("pawn_not_promoted");
    assert!(first[0].contains("warning"), "{}", first[0]);
    rig.lift(B8);
    rig.wait(500);
    rig.place(B8, white(Role::Queen));
    rig.mv(E8, D7);
    rig.press();
    rig.wait(1500);
    rig.press();
    let second = rig.detail("clock_pressed_without_move");
    assert_eq!(second.len(), 1, "{}", rig.log());
    assert!(
        second[0].contains("number 2") && second[0].contains("drawn"),
        "{}",
        second[0]
    );
}

#[test]
fn two_presses_without_a_move_lose_the_game() {
    let mut rig = open_game();
    rig.wait(1500);
    rig.press();
    rig.arbiter_sets_clock_back();
    rig.wait(1500);
    rig.press();
    let details = rig.detail("clock_pressed_without_move");
    assert_eq!(details.len(), 2, "{}", rig.log());
    assert!(details[1].contains("lost by White"), "{}", details[1]);
}

// ---------------------------------------------------------------------------------------------
// 6. Results in the right order (the flag parts are the clock's)

#[test]
fn a_first_move_taken_back_after_the_press_is_no_new_game() {
    let mut rig = Rig::standard();
    rig.play(&[(E2, E4)]);
    rig.wait(1000);
    rig.mv(E4, E2);
    rig.wait(2500);
    assert_eq!(rig.engine.games().len(), 1, "{}", rig.log());
    assert_eq!(rig.sans(), ["e4"], "{}", rig.log());
    let started = rig
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::GameStarted { .. }))
        .count();
    assert_eq!(started, 1, "{}", rig.log());
}

#[test]
fn kings_placed_seconds_apart_are_a_result_signal_not_displaced() {
    // White to move; Black's king goes to the centre first, White's four seconds later.
    let mut rig = Rig::from_fen("4k3/pp6/8/8/8/8/PP6/4K3 w - - 0 1");
    rig.play(&[(A2, A3), (A7, A6)]);
    rig.lift(E8);
    rig.wait(300);
    rig.place(E5, black(Role::King));
    rig.wait(4000);
    rig.lift(E1);
    rig.wait(300);
    rig.place(D4, white(Role::King));
    rig.wait(2000);
    assert_eq!(
        rig.ended(),
        Some(("0-1", EndReason::KingsSignal)),
        "{}",
        rig.log()
    );
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    assert_eq!(rig.sans(), ["a3", "a6"]);
}

#[test]
fn tidying_up_after_a_result_signal_or_an_arbiter_result_raises_nothing() {
    for by_arbiter in [false, true] {
        let mut rig = open_game();
        if by_arbiter {
            rig.feed(Observation::Operator(OperatorAction::SetResult {
                result: "1/2-1/2".into(),
            }));
        } else {
            rig.lift(E1);
            rig.lift(E8);
            rig.wait(300);
            rig.place(E4, white(Role::King));
            rig.wait(2000);
            rig.place(E5, black(Role::King));
        }
        rig.wait(1000);
        // Pieces swept off, a knight put back on a square it could have moved to, presses.
        rig.mv(F3, G5);
        rig.press();
        for sq in [A2, B2, C2, D7, C6] {
            rig.lift(sq);
        }
        rig.wait(3000);
        rig.press();
        assert!(rig.ended().is_some(), "{}", rig.log());
        assert_eq!(rig.sans(), ["e4", "e5", "Nf3", "Nc6"], "{}", rig.log());
        assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Arbiter restorations

#[test]
fn a_restoration_through_a_square_that_is_a_legal_move_still_restores() {
    let mut rig = open_game();
    rig.mv(F1, H3);
    rig.press();
    // The arbiter carries the bishop back via e2 (Be2 would be legal), held there 1.5 s.
    rig.lift(H3);
    rig.wait(300);
    rig.place(E2, white(Role::Bishop));
    rig.wait(1500);
    rig.lift(E2);
    rig.wait(300);
    rig.place(F1, white(Role::Bishop));
    rig.wait(500);
    assert_eq!(rig.resolved(), ["illegal_move"], "{}", rig.log());
    rig.arbiter_sets_clock_back();
    rig.mv(F1, C4);
    rig.press();
    assert_eq!(
        rig.sans(),
        ["e4", "e5", "Nf3", "Nc6", "Bc4"],
        "{}",
        rig.log()
    );
    assert_eq!(
        rig.irregularities(),
        vec![("illegal_move", 5)],
        "{}",
        rig.log()
    );
}

#[test]
fn a_dump_of_a_capture_in_progress_while_the_queen_is_fetched_raises_nothing() {
    // A whole-position board (Certabo) sends a dump whenever it stands still: here while White,
    // capturing on a8 with promotion, holds the pawn and the rook and fetches the queen.
    let mut rig = Rig::standard();
    rig.play(&[
        (E2, E4),
        (D7, D5),
        (E4, D5),
        (C7, C6),
        (D5, C6),
        (G8, F6),
        (C6, B7),
        (B8, D7),
    ]);
    let pos = after(
        &Chess::default(),
        &["e4", "d5", "exd5", "c6", "dxc6", "Nf6", "cxb7", "Nbd7"],
    );
    let mut board = pos.board().clone();
    board.discard_piece_at(B7);
    board.discard_piece_at(A8);
    rig.wait(2000);
    rig.lift(B7);
    rig.wait(300);
    rig.lift(A8);
    rig.wait(1700);
    rig.dump(&board);
    rig.wait(3000);
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
    rig.place(A8, white(Role::Queen));
    rig.press();
    assert_eq!(
        rig.sans().last().map(String::as_str),
        Some("bxa8=Q"),
        "{}",
        rig.log()
    );
    assert_eq!(rig.irregularities(), vec![], "{}", rig.log());
}
