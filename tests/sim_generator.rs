//! The board/clock simulator: hand orders, determinism, frames, and replay of its output.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use eboardd::capture::{Record, RecordKind};
use eboardd::core::observation::SquareReading;
use eboardd::driver::dgt::{piece_code, reading_from_code};
use eboardd::sim::hand::{HandAction, is_physical, orders};
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};
use eboardd::sim::{
    SimConfig, Style, capture_text, field_index, synthesize, synthesize_game, synthesize_moves,
};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{Board, CastlingMode, Chess, Move, Position, Square};
use support::{castle_kind, games, pgn_files};

#[test]
fn every_order_gives_the_board_after_the_move() {
    let mut all = games("standard");
    all.extend(games("chess960"));
    assert!(all.len() > 4000, "corpus: {} games", all.len());
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &all {
        let mut pos = g.start.clone();
        for m in &g.moves {
            let after = pos.clone().play(*m).unwrap();
            let list = orders(&pos, m);
            assert!(!list.is_empty(), "no order for {m:?}");
            for o in &list {
                let mut b = pos.board().clone();
                for &a in o {
                    assert!(
                        eboardd::sim::hand::apply_action(&mut b, a),
                        "impossible {a:?} in {o:?} for {m:?}"
                    );
                }
                assert_eq!(&b, after.board(), "order {o:?} for {m:?}");
            }
            let kind = match m {
                Move::EnPassant { .. } => Some("en-passant"),
                Move::Normal {
                    promotion: Some(r),
                    capture,
                    ..
                } => Some(match (capture.is_some(), *r == shakmaty::Role::Queen) {
                    (true, _) => "capture-promotion",
                    (false, true) => "promotion",
                    (false, false) => "under-promotion",
                }),
                Move::Castle { .. } if g.is_chess960() => castle_kind(&pos, m),
                Move::Castle { .. } => Some("castle"),
                _ => None,
            };
            if let Some(k) = kind {
                *seen.entry(k).or_default() += 1;
                let want = match k {
                    "en-passant" => 3,
                    "capture-promotion" => 4,
                    "castle" | "disjoint" => 6,
                    _ => 2,
                };
                assert!(
                    list.len() >= want,
                    "{k}: only {} orders for {m:?}",
                    list.len()
                );
            }
            pos = after;
        }
    }
    let kinds = "en-passant promotion under-promotion capture-promotion castle king-only \
                 rook-only swap king-onto-rook rook-onto-king disjoint";
    for k in kinds.split_whitespace() {
        assert!(
            seen.get(k).copied().unwrap_or(0) > 0,
            "no {k} in corpus: {seen:?}"
        );
    }
}

fn square_of(index: u8, reversed: bool) -> Square {
    let n = if reversed {
        63 - u32::from(index)
    } else {
        u32::from(index)
    };
    Square::from_coords(shakmaty::File::new(n % 8), shakmaty::Rank::new(7 - n / 8))
}

/// Applies a FIELD_UPDATE frame to a shadow board; `false` for any other frame.
fn apply_field(board: &mut Board, frame: &[u8], reversed: bool) -> bool {
    if frame[0] != 0x8e {
        return false;
    }
    assert_eq!(frame.len(), 5);
    let sq = square_of(frame[3], reversed);
    match reading_from_code(frame[4]).unwrap() {
        SquareReading::Piece(p) => board.set_piece_at(sq, p),
        _ => board.discard_piece_at(sq),
    }
    true
}

/// Replays field updates on a shadow board; after each ply (just before the next ply's first
/// action, or at the end) the board must be the game's position. Returns the BWTIME frames.
fn replay_check(g: &ScriptGame, cfg: &SimConfig) -> Vec<(i64, Vec<u8>)> {
    let syn = synthesize_game(g, cfg);
    let recs = &syn.records;
    assert_eq!(recs[0].kind, RecordKind::Tx(vec![0x42]));
    assert_eq!(recs[2].kind, RecordKind::Tx(vec![0x43]));
    let RecordKind::Rx(dump) = &recs[1].kind else {
        panic!("no dump")
    };
    assert_eq!(dump.len(), 67);
    let mut board = Board::empty();
    for (i, &code) in dump[3..].iter().enumerate() {
        if let Some(SquareReading::Piece(p)) = reading_from_code(code) {
            board.set_piece_at(square_of(i as u8, cfg.reversed_board), p);
        }
    }
    assert_eq!(&board, g.start.board());
    let mut clocks = Vec::new();
    let mut positions = vec![];
    let mut pos = g.start.clone();
    for m in &g.moves {
        pos = pos.clone().play(*m).unwrap();
        positions.push(pos.board().clone());
    }
    let mut checkpoints: Vec<i64> = syn.plies.iter().skip(1).map(|p| p.first_action).collect();
    checkpoints.push(i64::MAX);
    let mut ply = 0;
    let mut last_t = 0;
    for r in &recs[3..] {
        assert!(r.t >= last_t, "time goes back");
        last_t = r.t;
        while r.t >= checkpoints[ply] {
            assert_eq!(
                board,
                positions[ply],
                "after ply {} (seed {}, {:?})",
                ply + 1,
                cfg.seed,
                syn.plies[ply]
            );
            ply += 1;
        }
        let RecordKind::Rx(b) = &r.kind else {
            panic!("unexpected record {r:?}")
        };
        if !apply_field(&mut board, b, cfg.reversed_board) {
            assert_eq!((b.len(), b[0]), (10, 0x8d), "unexpected frame {b:02x?}");
            clocks.push((r.t, b.clone()));
        }
    }
    assert_eq!(ply, g.moves.len() - 1);
    assert_eq!(&board, positions.last().unwrap());
    // One BWTIME per press, where the lever changes side; presses alternate.
    let levers: Vec<u8> = clocks.iter().map(|(_, b)| b[9] & 0x02).collect();
    let changes = levers.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(
        changes,
        syn.plies.iter().filter(|p| p.press.is_some()).count()
    );
    clocks
}

#[test]
fn synthesis_is_deterministic() {
    let g = &games("standard")[0];
    for style in [Style::Clean, Style::Human, Style::Blitz] {
        let a = synthesize(g, &SimConfig::new(style, 42));
        assert_eq!(a, synthesize(g, &SimConfig::new(style, 42)));
        assert_ne!(a, synthesize(g, &SimConfig::new(style, 43)));
        assert_eq!(
            capture_text(&a),
            capture_text(&synthesize(g, &SimConfig::new(style, 42)))
        );
    }
}

fn hex(r: &Record) -> String {
    match &r.kind {
        RecordKind::Rx(b) | RecordKind::Tx(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn clean_first_game_has_the_expected_frames() {
    let g = &games("standard")[0];
    let cfg = SimConfig {
        white_on_right: Some(false),
        clock_ticks: Some(false),
        ..SimConfig::clean(1)
    };
    let recs = synthesize(g, &cfg);
    assert_eq!(hex(&recs[0]), "42");
    assert_eq!(
        hex(&recs[1]),
        "86004308090a0c0b0a09080707070707070707000000000000000000000000000000000000000000000000000000000000000001010101010101010203040605040302"
    );
    assert_eq!(hex(&recs[2]), "43");
    assert_eq!(
        hex(&recs[3]),
        "8d000a01300001300009",
        "clock started, White (left) to move: status 0x09 as a real DGT 3000 sends it"
    );
    let Move::Normal {
        from,
        to,
        role,
        capture: None,
        promotion: None,
    } = g.moves[0]
    else {
        panic!("first move {:?}", g.moves[0])
    };
    let dgt = piece_code(SquareReading::Piece(shakmaty::Piece {
        color: shakmaty::Color::White,
        role,
    }));
    assert_eq!(
        hex(&recs[4]),
        format!("8e0005{:02x}00", field_index(from, false))
    );
    assert_eq!(
        hex(&recs[5]),
        format!("8e0005{:02x}{dgt:02x}", field_index(to, false))
    );
    let press = hex(&recs[6]);
    assert!(
        press.starts_with("8d000a013000") && press.ends_with("13"),
        "{press}"
    );
    let text = capture_text(&recs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), recs.len() + 1);
    assert!(lines[0].starts_with("{\"format\":\"eboard-capture\",\"version\":1"));
    assert_eq!(
        lines[1],
        "{\"t\":0.000000,\"dev\":\"board-1\",\"tx\":\"42\"}"
    );
    let parsed = eboardd::capture::parse_capture("sim", &text).unwrap();
    assert_eq!(parsed.records, recs);
    assert!(parsed.warnings.is_empty());
    replay_check(g, &cfg);
}

#[test]
fn standard_games_replay_in_every_style() {
    for (file_no, f) in pgn_files(&support::pgn_dir().join("standard"))
        .iter()
        .enumerate()
    {
        let all: Vec<ScriptGame> = parse_games_bytes(&std::fs::read(f).unwrap())
            .into_iter()
            .map(Result::unwrap)
            .collect();
        for (i, g) in all.iter().enumerate().step_by(9).take(12) {
            for (s, style) in [Style::Clean, Style::Human, Style::Blitz]
                .into_iter()
                .enumerate()
            {
                let seed = (file_no * 1000 + i * 3 + s) as u64;
                let mut cfg = SimConfig::new(style, seed);
                cfg.reversed_board = i % 4 == 1;
                cfg.clock_ticks = Some(i % 3 == 0);
                let clocks = replay_check(g, &cfg);
                if i % 3 == 0 {
                    assert!(clocks.len() > g.moves.len(), "ticks expected");
                }
            }
        }
    }
}

#[test]
fn chess960_games_castle_in_every_mode() {
    let all = games("chess960");
    assert!(all.iter().all(ScriptGame::is_chess960));
    // kind → distinct hand orders used (as first-action roles + length).
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (i, g) in all.iter().enumerate() {
        let style = [Style::Blitz, Style::Human][usize::from(i % 5 != 0)];
        let cfg = SimConfig::new(style, 960 + i as u64);
        replay_check(
            g,
            &SimConfig {
                reversed_board: i % 7 == 3,
                ..cfg.clone()
            },
        );
        let syn = synthesize_game(g, &cfg);
        let mut pos = g.start.clone();
        for p in &syn.plies {
            if let Some(kind) = castle_kind(&pos, &p.mv) {
                assert!(is_physical(pos.board(), &p.order));
                let shape: Vec<String> = p
                    .order
                    .iter()
                    .map(|a| match a {
                        HandAction::Lift(sq) => {
                            format!("L{:?}", pos.board().piece_at(*sq).unwrap().role)
                        }
                        HandAction::Place(_, pc) => format!("P{:?}", pc.role),
                    })
                    .collect();
                used.entry(kind).or_default().insert(shape.join(" "));
            }
            pos.play_unchecked(p.mv);
        }
    }
    for kind in "king-only rook-only swap king-onto-rook rook-onto-king disjoint".split(' ') {
        let shapes = used
            .get(kind)
            .unwrap_or_else(|| panic!("{kind} never simulated"));
        assert!(shapes.len() >= 2, "{kind}: {shapes:?}");
    }
    // King-only / rook-only castling both with and without touching the other piece.
    for (kind, actions) in [("king-only", 1), ("king-only", 3), ("rook-only", 3)] {
        let shapes = &used[kind];
        assert!(
            shapes.iter().any(|s| s.matches(' ').count() == actions),
            "{kind}: {shapes:?}"
        );
    }
}

fn play_uci(fen: &str, ucis: &[&str]) -> (Chess, Vec<Move>) {
    let start: Chess = Fen::from_ascii(fen.as_bytes())
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    let mut pos = start.clone();
    let mut moves = Vec::new();
    for u in ucis {
        let m = UciMove::from_ascii(u.as_bytes())
            .unwrap()
            .to_move(&pos)
            .unwrap();
        pos.play_unchecked(m);
        moves.push(m);
    }
    (start, moves)
}

#[test]
fn own_positions_en_passant_and_promotion() {
    let (start, moves) = play_uci(
        "4k3/1P6/8/8/5p2/8/4P3/4K3 w - - 0 1",
        &["e2e4", "f4e3", "b7b8n", "e8f7"],
    );
    let end = moves.iter().fold(start.clone(), |p, m| p.play(*m).unwrap());
    for seed in 0..20 {
        for style in [Style::Clean, Style::Human, Style::Blitz] {
            let recs = synthesize_moves(
                &start,
                CastlingMode::Standard,
                &moves,
                &SimConfig::new(style, seed),
            );
            let mut b = start.board().clone();
            for r in &recs[3..] {
                if let RecordKind::Rx(f) = &r.kind {
                    apply_field(&mut b, f, false);
                }
            }
            assert_eq!(&b, end.board(), "seed {seed} {style:?}");
        }
    }
}
