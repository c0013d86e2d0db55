//! What the core makes of a Millennium ChessLink board: whole-board statuses, decoded by the
//! `millennium` driver into changed squares, go through the same inference and irregularity
//! checks as a DGT board's field updates (the touch-move claims of `docs/fide-laws.md`). No clock: moves are
//! completed by the next move.

mod support;

use eboardd::core::engine::EngineConfig;
use eboardd::core::event::CoreEvent;
use eboardd::core::observation::{FieldArray, Micros, SquareReading};
use eboardd::driver::millennium::codec::ChessLinkReply;

use eboardd::replay::Device;
use serde_json::Value;
use shakmaty::{Chess, Position, Square};

const MS: Micros = 1000;

/// A ChessLink board in the hands of a test: every change is one status on the wire.
struct Board {
    device: Device,
    fields: FieldArray,
    t: Micros,
    events: Vec<CoreEvent>,
}

fn index(sq: Square) -> usize {
    // ChessLink order: a8 … h8, a7 … h1.
    (7 - sq.rank() as usize) * 8 + sq.file() as usize
}

impl Board {
    fn new() -> Board {
        let pos = Chess::default();
        let mut fields = [SquareReading::Empty; 64];
        for (sq, piece) in pos.board().iter() {
            fields[index(sq)] = SquareReading::Piece(piece);
        }
        let driver = eboardd::family::driver("millennium").expect("the millennium driver");
        let mut b = Board {
            device: Device::with_driver("mill", driver, EngineConfig::default()),
            fields,
            t: 0,
            events: Vec::new(),
        };
        b.send();
        b
    }

    fn send(&mut self) {
        let bytes = ChessLinkReply::Status(Box::new(self.fields)).encode();
        self.device.receive(self.t, &bytes, &mut self.events);
        self.t += 300 * MS;
    }

    fn lift(&mut self, sq: Square) -> SquareReading {
        let r = std::mem::take(&mut self.fields[index(sq)]);
        self.send();
        r
    }

    fn place(&mut self, sq: Square, r: SquareReading) {
        self.fields[index(sq)] = r;
        self.send();
    }

    fn mv(&mut self, from: Square, to: Square) {
        let p = self.lift(from);
        if self.fields[index(to)] != SquareReading::Empty {
            self.lift(to);
        }
        self.place(to, p);
        self.t += 700 * MS;
    }

    /// The events as JSON (the wire form).
    fn json(&self) -> Vec<Value> {
        support::wire_events(&self.events)
    }

    /// Field `field` of every event of kind `kind`.
    fn of(&self, kind: &str, field: &str) -> Vec<String> {
        support::event_fields(&self.events, kind, field)
    }

    fn irregularities(&self) -> Vec<String> {
        self.of("irregularity", "code")
    }

    fn sans(&self) -> Vec<String> {
        self.of("move_made", "san")
    }
}

fn opening() -> Board {
    let mut b = Board::new();
    b.mv(Square::E2, Square::E4);
    b.mv(Square::E7, Square::E5);
    b.mv(Square::G1, Square::F3);
    b.mv(Square::B8, Square::C6);
    b
}

#[test]
fn moves_are_inferred_from_whole_board_statuses_without_a_clock() {
    let mut b = opening();
    b.mv(Square::F3, Square::E5); // a capture: the taker lifted first
    b.mv(Square::C6, Square::E5);
    assert_eq!(
        b.sans(),
        ["e4", "e5", "Nf3", "Nc6", "Nxe5", "Nxe5"],
        "{:?}",
        b.json()
    );
    assert_eq!(b.irregularities(), Vec::<String>::new());
}

#[test]
fn a_lifted_and_replaced_piece_then_another_moved_is_touch_move() {
    let mut b = opening();
    let bishop = b.lift(Square::F1);
    b.t += 600 * MS;
    b.place(Square::F1, bishop);
    b.mv(Square::D2, Square::D4);
    b.mv(Square::A7, Square::A6); // completes d4
    assert_eq!(b.sans(), ["e4", "e5", "Nf3", "Nc6", "d4", "a6"]);
    assert!(
        b.irregularities()
            .contains(&"touched_piece_not_moved".to_string()),
        "{:?}",
        b.json()
    );
}
