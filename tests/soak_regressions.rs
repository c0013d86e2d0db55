//! Captures that once went wrong, replayed through the library's one replay path: from the
//! tournament soak (`scripts/soak.py`, `tests/data/soak/`) and from the chain's end-to-end test
//! (`tests/e2e_chain.rs`, `tests/data/chain/`). The truth is the PGN game the emulator played,
//! written here from its source (the soak's input file, the demo's games).
//!
//! `soak/board-26.jsonl`: 40 emulated DGT boards at 500× pace, the daemon killed with `kill -9`
//! after 12. … a6. On reconnection the daemon asked for the board's memory (`49`); the memory
//! held 13. Qd2 Nb4, and the players went on while it was sent: the board dump after it already
//! showed 14. Bg5. The memory was dropped because the dump was not its end, the gap search found
//! two orders (Qd2 Nb4 Bg5 | Bg5 Nb4 Qd2) and raised `moves_missing` — and then each clock press
//! made a move of the record's position with the rest of the board "displaced" (Bg5, Bd7, Ng3 …
//! against the real Nxd3 Qxd3 Bd7), 35 plies instead of 69.
//!
//! `soak/board-89-round-4.jsonl`: 200 boards at 60× pace, round 4 of the nine (the records of
//! that round only, times from the round's start), the daemon killed after 7. … d6. The memory
//! held 8. e3 O-O 9. O-O; the dump after it showed 9. … a6 and White's a-pawn in hand (10. a3
//! being made). Neither the memory's end nor two complete plies after it: nothing was taken from
//! the memory, and the gap from 7. … d6 had no sequence (`moves_missing`): 14 plies of 29.
//!
//! `chain/dgt-bus-01010-no-poll-answered.jsonl`: board 1010 of twelve DGT boards chained on a line
//! that loses 3% of the boards' bytes. Every answer to SEND_CHANGES in the game's first 33 s was
//! garbled, and only REPEAT_CHANGES brought the changes, so the board's core never saw a poll and
//! took it for a board that reports each change: when 3. d4 cxd4 4. Nxd4 came in one answer, it
//! judged the board a second later, between two polls, and raised `displaced_pieces` (d2, f3,
//! d4, c5) instead of waiting for the poll that recovered the three plies. A chain's board is
//! polled from the start: its family says so.
//!
//! `chain/dgt-bus-01010-plies-in-one-answer.jsonl`: the same board on the same line, another
//! run. A packet of its changes (77 bytes: the start mark's 32 pieces and 1. e4) was repeated
//! for 23 s before it came through whole, and the next one brought 1... c5 2. Nf3 Nc6 3. d4
//! cxd4 4. Nxd4 g6 5. c4 Bg7 at once; the board's log had rewritten d4's two changes in a row
//! (the pawn put there and taken at once) as one. The core followed 2... Nc6 and lost the
//! thread; six plies are beyond the gap search and its memory (over a hundred bytes) never came
//! through whole: `displaced_pieces`, and the record stood at ply 4 for the rest of the game.
//! The order of the changes tells the six plies (`core::engine::stream`).
//!
//! `chain/dgt-bus-01010-marked-mid-game.jsonl`: the same board, a third run. Its power-up packet
//! took 25 s to come through, and the game's start was marked (SET_START_GAME) when the record
//! began, with the players eight plies in: the mark logged every piece where it stood, in the
//! middle of the changes that told 3. d4 … 5. c4 Bg7. Those 32 entries repeat what the moves
//! already changed, or change nothing: they are passed over, not taken for changes out of order.

use std::path::PathBuf;

use eboardd::capture::{Capture, Record, RecordKind, read_capture};
use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::replay::{Playback, Timeline};

/// The game board 26 played (Morphy–Anderssen, the soak's round-1 game 26), 69 plies.
const BOARD_26: &str = "e4 e6 d4 g6 Bd3 Bg7 Be3 c5 c3 cxd4 cxd4 Nc6 Ne2 Nge7 O-O O-O Nbc3 d5 \
    e5 f6 f4 fxe5 fxe5 a6 Qd2 Nb4 Bg5 Nxd3 Qxd3 Bd7 Qh3 Qe8 Ng3 Rc8 Rxf8+ Qxf8 Rf1 Qe8 Qh4 Nf5 \
    Nxf5 gxf5 Rf3 Bb5 Rg3 Rc7 Bf6 f4 Qxf4 Qf8 Nxb5 axb5 Qh6 Kh8 Rxg7 Rxg7 Kf2 Kg8 Qxg7+ Qxg7 \
    Bxg7 Kxg7 g4 b4 h4 b5 Ke3 b3 a3";

/// The game board 89 played in round 4 (Lautier–Ivanchuk), 29 plies.
const BOARD_89_ROUND_4: &str = "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 Bb4 Nd5 Bc5 d3 h6 Bg2 d6 e3 O-O O-O a6 \
    a3 Ba7 b4 Nxd5 cxd5 Ne7 Nd2 Bf5 Nc4 Qd7 Bb2";

/// The first ten plies of the demo's game that board 1010 of the chain played (its line 248).
const CHAIN_BOARD_1010: &str = "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4 g6 c4 Bg7";

/// Capture `name` under `tests/data/` (`soak/…`, `chain/…`).
fn capture(name: &str) -> Capture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    read_capture(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every event of a replay of `cap` with `records` instead of its own.
fn events(cap: &Capture, records: Vec<Record>) -> Vec<EventKind> {
    let plan = Timeline::from_capture(Capture {
        header: cap.header.clone(),
        records,
        warnings: Vec::new(),
    });
    let mut got = Vec::new();
    let mut sink = |_: &str, e: &CoreEvent| {
        got.push(e.kind.clone());
        Ok(())
    };
    Playback::play(plan, &mut sink).expect("replay");
    got
}

fn sans(events: &[EventKind]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::MoveMade { san, .. } => Some(san.clone()),
            _ => None,
        })
        .collect()
}

fn codes(events: &[EventKind]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::Irregularity { code, .. } => Some(code.as_str().to_string()),
            _ => None,
        })
        .collect()
}

/// The replay of capture `name` records exactly the game `want` (SAN) and reports nothing.
fn whole_game(name: &str, want: &str) {
    let cap = capture(name);
    let got = events(&cap, cap.records.clone());
    let want: Vec<&str> = want.split_whitespace().collect();
    assert_eq!(sans(&got), want, "{name}");
    assert!(codes(&got).is_empty(), "{name}: {:?}", codes(&got));
}

#[test]
fn the_memory_and_the_moves_made_while_it_was_sent_give_the_whole_game() {
    whole_game("soak/board-26.jsonl", BOARD_26);
}

#[test]
fn without_the_memory_the_gap_stays_open_and_no_move_is_made_of_the_record_position() {
    // The same capture with the board's answer to `49` taken out: the dump alone is three
    // plies ahead in two orders. The arbiter is told once; until the gap is resolved no press
    // makes a move of the record's position, and nothing else is reported.
    let cap = capture("soak/board-26.jsonl");
    let records: Vec<Record> = cap
        .records
        .iter()
        .filter(|r| !matches!(&r.kind, RecordKind::Rx(bytes) if bytes.len() > 1000))
        .cloned()
        .collect();
    assert!(
        records.len() < cap.records.len(),
        "the memory's frame is in the capture"
    );
    let got = events(&cap, records);
    let want: Vec<&str> = BOARD_26.split_whitespace().take(24).collect();
    assert_eq!(sans(&got), want);
    assert_eq!(codes(&got), ["moves_missing"]);
}

#[test]
fn a_dump_with_a_move_in_progress_plies_after_the_memory_recovers_the_memory() {
    whole_game("soak/board-89-round-4.jsonl", BOARD_89_ROUND_4);
}

#[test]
fn a_chain_board_whose_polls_were_all_garbled_is_judged_at_its_polls() {
    whole_game(
        "chain/dgt-bus-01010-no-poll-answered.jsonl",
        CHAIN_BOARD_1010,
    );
}

#[test]
fn a_chain_boards_plies_in_one_answer_come_from_the_order_of_its_changes() {
    whole_game(
        "chain/dgt-bus-01010-plies-in-one-answer.jsonl",
        CHAIN_BOARD_1010,
    );
}

#[test]
fn a_start_mark_logged_in_the_middle_of_a_chain_boards_changes_is_passed_over() {
    whole_game(
        "chain/dgt-bus-01010-marked-mid-game.jsonl",
        CHAIN_BOARD_1010,
    );
}
