//! Cost of the gap search (issue 10): the legal move sequences of up to four plies that lead from
//! the recorded position to a board that jumped ahead (`cargo bench --bench gap_search`).
//!
//! - `unique_4`: the opening, four plies ahead with one sequence (e4 d5 exd5 Qxd5);
//! - `several_3`: three plies ahead with transpositions (e4 e5 Nf3 / Nf3 e5 e4);
//! - `none_busy`: a busy middlegame (48 legal moves) whose board has four pieces of each side
//!   moved where no four plies take them: the search runs every length to the end, the worst
//!   case measured;
//! - `several_queens_4`: the same middlegame, both queens having made two moves each (many
//!   routes, every length searched to the end: the worst case measured);
//! - `none_lifted`: an empty board (a lifted board), cut at once.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use eboardd::core::engine::gap::{self, Gap};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{Board, CastlingMode, Chess, Color, Piece, Position, Role, Square};

fn after(pos: &Chess, sans: &[&str]) -> Chess {
    let mut pos = pos.clone();
    for s in sans {
        let m = s.parse::<San>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(m);
    }
    pos
}

fn kiwipete() -> Chess {
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap()
}

/// Four pieces of each side shifted to squares no four plies reach.
fn busy_target(pos: &Chess) -> Board {
    let mut b = pos.board().clone();
    let shifts = [
        (Square::A2, Square::A5, Color::White, Role::Pawn),
        (Square::G2, Square::G5, Color::White, Role::Pawn),
        (Square::D2, Square::H6, Color::White, Role::Bishop),
        (Square::E5, Square::B5, Color::White, Role::Knight),
        (Square::A7, Square::A4, Color::Black, Role::Pawn),
        (Square::G6, Square::G3, Color::Black, Role::Pawn),
        (Square::B6, Square::D3, Color::Black, Role::Knight),
        (Square::F6, Square::H5, Color::Black, Role::Knight),
    ];
    for (from, to, color, role) in shifts {
        b.discard_piece_at(from);
        b.set_piece_at(to, Piece { color, role });
    }
    b
}

fn bench(c: &mut Criterion) {
    let start = Chess::default();
    let unique = after(&start, &["e4", "d5", "exd5", "Qxd5"]);
    let several = after(&start, &["e4", "e5", "Nf3"]);
    let busy = kiwipete();
    let busy_board = busy_target(&busy);
    let queens = after(&busy, &["Qg3", "Qd6", "Qh4", "Qc5"]);
    assert!(matches!(
        gap::search(&start, unique.board(), gap::MAX_PLIES),
        Gap::One(_)
    ));
    assert!(matches!(
        gap::search(&start, several.board(), gap::MAX_PLIES),
        Gap::Several(_)
    ));
    assert_eq!(gap::search(&busy, &busy_board, gap::MAX_PLIES), Gap::None);
    let mut g = c.benchmark_group("gap_search");
    g.bench_function("unique_4", |b| {
        b.iter(|| gap::search(black_box(&start), black_box(unique.board()), gap::MAX_PLIES))
    });
    g.bench_function("several_3", |b| {
        b.iter(|| {
            gap::search(
                black_box(&start),
                black_box(several.board()),
                gap::MAX_PLIES,
            )
        })
    });
    g.bench_function("none_busy", |b| {
        b.iter(|| gap::search(black_box(&busy), black_box(&busy_board), gap::MAX_PLIES))
    });
    g.bench_function("several_queens_4", |b| {
        b.iter(|| gap::search(black_box(&busy), black_box(queens.board()), gap::MAX_PLIES))
    });
    g.bench_function("none_lifted", |b| {
        b.iter(|| gap::search(black_box(&busy), black_box(&Board::empty()), gap::MAX_PLIES))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
