//! Arbiter corrections in the core: take back, replace a move, set a position, change or
//! reopen a result; each refusal changes nothing; the engine waits for the board to show the
//! corrected position before it infers moves again.

mod support;

use eboardd::core::correction::CorrectionError;
use eboardd::core::engine::EngineConfig;
use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::core::observation::{Observation, OperatorAction};
use shakmaty::fen::Fen;
use shakmaty::san::{San, SanPlus};
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use support::rig::{MS, Rig};

/// The shared rig fed whole-board dumps, one a second, of the position the test has on the
/// board (`pos`).
impl Rig {
    fn new() -> Rig {
        Rig::from(Chess::default())
    }

    fn from(pos: Chess) -> Rig {
        let mut rig = Rig::configured(EngineConfig::default()).every(1000 * MS);
        rig.pos = pos;
        let board = rig.pos.board().clone();
        rig.dump(&board);
        rig
    }

    /// Play `san` on the board.
    fn show_move(&mut self, san: &str) {
        let m = San::from_ascii(san.as_bytes())
            .unwrap()
            .to_move(&self.pos)
            .unwrap_or_else(|e| panic!("{san}: {e}"));
        self.pos.play_unchecked(m);
        let board = self.pos.board().clone();
        self.dump(&board);
    }

    fn plays(&mut self, sans: &str) {
        for s in sans.split_whitespace() {
            self.show_move(s);
        }
    }

    /// Set the board to `pos` (the arbiter or the players putting pieces right).
    fn set_board(&mut self, pos: Chess) {
        self.pos = pos;
        let board = self.pos.board().clone();
        self.dump(&board);
    }

    /// Apply an operator action after checking it; returns the check's answer and the events.
    fn op(&mut self, action: OperatorAction) -> (Result<(), CorrectionError>, Vec<CoreEvent>) {
        self.t += 1_000_000;
        let checked = self.engine.check_operator(&action);
        let from = self.events.len();
        self.engine
            .handle(self.t, &Observation::Operator(action), &mut self.events);
        (checked, self.events[from..].to_vec())
    }

    fn result(&self) -> Option<&'static str> {
        self.engine
            .games()
            .last()
            .and_then(|g| g.result.map(|r| r.0.as_str()))
    }

    fn position(&self) -> Chess {
        self.engine.games().last().unwrap().position().clone()
    }

    fn after(&self, sans: &str) -> Chess {
        let mut pos = Chess::default();
        for s in sans.split_whitespace() {
            let m = San::from_ascii(s.as_bytes())
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
        }
        pos
    }
}

fn kinds(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(&e.kind).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The engine's state that a refused correction must leave alone.
fn state(rig: &Rig) -> String {
    let games: Vec<String> = rig
        .engine
        .games()
        .iter()
        .map(|g| {
            let moves: Vec<String> = g
                .moves
                .iter()
                .map(|m| format!("{} {:?} {:?}", m.san, m.completed, m.clock))
                .collect();
            format!(
                "game {} from {} result {:?}: {}",
                g.number,
                g.start_fen(),
                g.result,
                moves.join(", ")
            )
        })
        .collect();
    games.join("\n")
}

impl Rig {
    /// Let the decisions due take place (a game ending by rule after the settle time).
    fn settle(&mut self) {
        self.t += 1_000_000;
        self.engine.tick(self.t, &mut self.events);
    }
}

#[test]
fn take_back_drops_the_later_moves_and_waits_for_the_board_to_be_set_back() {
    let mut rig = Rig::new();
    rig.plays("e4 e5 Nf3 Nc6");
    assert_eq!(rig.sans(), words("e4 e5 Nf3 Nc6"));

    let (ok, ev) = rig.op(OperatorAction::TakeBack { ply: 2 });
    assert_eq!(ok, Ok(()));
    assert_eq!(
        kinds(&ev),
        [
            "move_retracted",
            "move_retracted",
            "correction",
            "irregularity"
        ]
    );
    assert!(matches!(ev[0].kind, EventKind::MoveRetracted { ply: 4 }));
    assert!(matches!(ev[1].kind, EventKind::MoveRetracted { ply: 3 }));
    let EventKind::Correction {
        ply, fen, squares, ..
    } = &ev[2].kind
    else {
        panic!("{ev:?}")
    };
    assert_eq!(*ply, 2);
    let after_two = rig.after("e4 e5");
    assert_eq!(
        *fen,
        Fen::from_position(&after_two, EnPassantMode::Legal).to_string()
    );
    let mut sq: Vec<String> = squares.iter().map(|s| s.to_string()).collect();
    sq.sort();
    assert_eq!(
        sq,
        ["b8", "c6", "f3", "g1"],
        "the squares still showing the old position"
    );
    assert_eq!(rig.sans(), words("e4 e5"));

    // The arbiter takes Nc6 back first: the board now shows ply 2 + Nf3, which is a legal move
    // from the corrected position, but nothing is inferred before the board is set right.
    rig.set_board(rig.after("e4 e5 Nf3"));
    assert_eq!(
        rig.sans(),
        words("e4 e5"),
        "no move while the board is set back"
    );
    let from = rig.events.len();
    rig.set_board(after_two.clone());
    assert_eq!(kinds(&rig.events[from..]), ["irregularity_resolved"]);
    // Play goes on from ply 2.
    rig.plays("Bc4 Bc5");
    assert_eq!(rig.sans(), words("e4 e5 Bc4 Bc5"));
}

#[test]
fn take_back_of_an_ended_game_reopens_it_and_ply_zero_is_the_start() {
    let mut rig = Rig::new();
    rig.plays("f3 e5 g4 Qh4#");
    rig.t += 1_000_000;
    rig.engine.tick(rig.t, &mut rig.events);
    assert_eq!(rig.result(), Some("0-1"));
    let (ok, ev) = rig.op(OperatorAction::TakeBack { ply: 3 });
    assert_eq!(ok, Ok(()));
    assert_eq!(rig.result(), None, "the game goes on");
    let EventKind::Correction { result, .. } = &ev
        .iter()
        .find(|e| matches!(e.kind, EventKind::Correction { .. }))
        .unwrap()
        .kind
    else {
        unreachable!()
    };
    assert_eq!(result.as_str(), "*");
    let (ok, _) = rig.op(OperatorAction::TakeBack { ply: 0 });
    assert_eq!(ok, Ok(()));
    assert!(rig.sans().is_empty());
    assert_eq!(rig.engine.games().len(), 1, "still the same game");
    rig.set_board(Chess::default());
    rig.plays("d4 d5");
    assert_eq!(rig.sans(), words("d4 d5"));
}

#[test]
fn a_take_back_out_of_range_is_refused_and_changes_nothing() {
    let mut rig = Rig::new();
    rig.plays("e4 e5");
    let before = state(&rig);
    let (ok, ev) = rig.op(OperatorAction::TakeBack { ply: 3 });
    assert_eq!(
        ok,
        Err(CorrectionError::PlyOutOfRange {
            ply: 3,
            min: 0,
            max: 2
        })
    );
    assert!(ev.is_empty(), "{ev:?}");
    assert_eq!(state(&rig), before);
    assert!(ok.unwrap_err().to_string().contains("out of range"));
}

#[test]
fn corrections_without_a_game_are_refused() {
    let mut rig = Rig::from(Chess::default());
    let mut empty = Rig::configured(EngineConfig::default());
    for action in [
        OperatorAction::TakeBack { ply: 0 },
        OperatorAction::SetResult {
            result: "1-0".into(),
        },
        OperatorAction::ReplaceMove {
            ply: 1,
            uci: Some("e2e4".into()),
            san: None,
        },
    ] {
        let (ok, ev) = empty.op(action.clone());
        assert_eq!(ok, Err(CorrectionError::NoGame), "{action:?}");
        assert!(ev.is_empty());
    }
    assert!(empty.engine.games().is_empty());
    // With a game but no move: a replacement has no move to replace.
    let (ok, _) = rig.op(OperatorAction::ReplaceMove {
        ply: 1,
        uci: Some("e2e4".into()),
        san: None,
    });
    assert!(matches!(ok, Err(CorrectionError::PlyOutOfRange { .. })));
}

#[test]
fn replace_move_keeps_the_later_moves_that_stay_legal() {
    let mut rig = Rig::new();
    rig.plays("e4 e5 Nf3 Nc6 Bb5");
    let (ok, ev) = rig.op(OperatorAction::ReplaceMove {
        ply: 3,
        uci: Some("b1c3".into()),
        san: None,
    });
    assert_eq!(ok, Ok(()));
    assert_eq!(rig.sans(), words("e4 e5 Nc3 Nc6 Bb5"));
    let made: Vec<u32> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MoveMade { ply, .. } => Some(*ply),
            _ => None,
        })
        .collect();
    assert_eq!(made, [3, 4, 5]);
    let completed = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::MoveCompleted { .. }))
        .count();
    assert_eq!(
        completed, 2,
        "plies 3 and 4 were completed, ply 5 only made"
    );
    assert!(
        rig.engine.games()[0].moves[4].completed.is_none(),
        "the last move stays open"
    );
    // The board is set to the corrected position, then play goes on.
    rig.set_board(rig.after("e4 e5 Nc3 Nc6 Bb5"));
    rig.show_move("a6");
    assert_eq!(rig.sans(), words("e4 e5 Nc3 Nc6 Bb5 a6"));
}

#[test]
fn replace_move_by_san_of_the_last_move() {
    let mut rig = Rig::new();
    rig.plays("e4 e5 Nf3");
    let (ok, _) = rig.op(OperatorAction::ReplaceMove {
        ply: 3,
        uci: None,
        san: Some("Bc4".into()),
    });
    assert_eq!(ok, Ok(()));
    assert_eq!(rig.sans(), words("e4 e5 Bc4"));
}

#[test]
fn a_replacement_that_breaks_a_later_move_or_is_illegal_is_refused() {
    let mut rig = Rig::new();
    rig.plays("e4 e5 Nf3 Nc6 Bb5");
    let before = state(&rig);
    let (ok, ev) = rig.op(OperatorAction::ReplaceMove {
        ply: 1,
        uci: None,
        san: Some("d4".into()),
    });
    assert_eq!(
        ok,
        Err(CorrectionError::LaterMoveIllegal {
            ply: 5,
            san: "Bb5".into(),
            keep: 4
        })
    );
    assert!(ev.is_empty());
    let (ok, _) = rig.op(OperatorAction::ReplaceMove {
        ply: 2,
        uci: None,
        san: Some("e4".into()),
    });
    assert!(
        matches!(ok, Err(CorrectionError::IllegalMove { ply: 2, .. })),
        "{ok:?}"
    );
    let (ok, _) = rig.op(OperatorAction::ReplaceMove {
        ply: 2,
        uci: Some("e7e5".into()),
        san: Some("e5".into()),
    });
    assert_eq!(ok, Err(CorrectionError::MoveNotation));
    let (ok, _) = rig.op(OperatorAction::ReplaceMove {
        ply: 2,
        uci: Some("zz".into()),
        san: None,
    });
    assert!(matches!(ok, Err(CorrectionError::IllegalMove { .. })));
    assert_eq!(state(&rig), before);
}

#[test]
fn set_position_goes_on_from_a_fen_with_its_side_to_move() {
    let mut rig = Rig::new();
    rig.plays("e4 e5");
    // Chess960 castling rights (Shredder-FEN): rooks on b1/g1 and b8/g8.
    let fen = "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 b GBgb - 0 1";
    let (ok, ev) = rig.op(OperatorAction::SetPosition { fen: fen.into() });
    assert_eq!(ok, Ok(()), "{ev:?}");
    assert_eq!(rig.engine.games().len(), 1, "the same game goes on");
    let g = &rig.engine.games()[0];
    assert_eq!(g.number, 1);
    assert_eq!(g.ply(), 0);
    assert_eq!(g.mode, CastlingMode::Chess960);
    assert_eq!(rig.position().turn(), shakmaty::Color::Black);
    assert!(kinds(&ev).contains(&"game_started".to_string()));
    assert!(kinds(&ev).contains(&"correction".to_string()));
    let pos: Chess = fen
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Chess960)
        .unwrap();
    rig.set_board(pos);
    rig.show_move("a6");
    rig.show_move("a3");
    assert_eq!(rig.sans(), words("a6 a3"));
}

#[test]
fn a_bad_or_finished_position_is_refused() {
    let mut rig = Rig::new();
    rig.plays("e4");
    let before = state(&rig);
    for (fen, what) in [
        ("not a fen", "parse"),
        ("8/8/8/8/8/8/8/8 w - - 0 1", "no kings"),
        (
            "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",
            "checkmate",
        ),
    ] {
        let (ok, ev) = rig.op(OperatorAction::SetPosition { fen: fen.into() });
        match (what, &ok) {
            ("checkmate", Err(CorrectionError::PositionOver { why, .. })) => {
                assert_eq!(why, "checkmate")
            }
            (_, Err(CorrectionError::BadFen { .. })) if what != "checkmate" => {}
            _ => panic!("{fen}: {ok:?}"),
        }
        assert!(ev.is_empty());
    }
    let (ok, _) = rig.op(OperatorAction::NewGame {
        fen: Some("nonsense".into()),
    });
    assert!(matches!(ok, Err(CorrectionError::BadFen { .. })));
    assert_eq!(state(&rig), before);
}

#[test]
fn a_result_can_be_changed_and_reopened() {
    let mut rig = Rig::new();
    rig.plays("e4 e5");
    let (ok, ev) = rig.op(OperatorAction::SetResult {
        result: "1-0".into(),
    });
    assert_eq!(ok, Ok(()));
    assert!(kinds(&ev).contains(&"game_ended".to_string()));
    let (ok, ev) = rig.op(OperatorAction::SetResult {
        result: "0-1".into(),
    });
    assert_eq!(ok, Ok(()));
    assert_eq!(kinds(&ev), ["game_ended", "correction"]);
    assert_eq!(rig.result(), Some("0-1"));
    let (ok, ev) = rig.op(OperatorAction::SetResult { result: "*".into() });
    assert_eq!(ok, Ok(()));
    assert_eq!(kinds(&ev), ["correction"]);
    assert_eq!(rig.result(), None);
    rig.show_move("Nf3");
    assert_eq!(
        rig.sans(),
        words("e4 e5 Nf3"),
        "a reopened game records moves"
    );

    let before = state(&rig);
    let (ok, ev) = rig.op(OperatorAction::SetResult {
        result: "2-0".into(),
    });
    assert_eq!(ok, Err(CorrectionError::BadResult("2-0".into())));
    assert!(ev.is_empty());
    assert_eq!(state(&rig), before);
}

#[test]
fn a_checkmate_cannot_be_reopened_without_a_take_back() {
    let mut rig = Rig::new();
    rig.plays("f3 e5 g4 Qh4#");
    rig.t += 1_000_000;
    rig.engine.tick(rig.t, &mut rig.events);
    let (ok, _) = rig.op(OperatorAction::SetResult { result: "*".into() });
    assert_eq!(ok, Err(CorrectionError::EndedOnBoard("checkmate".into())));
    assert_eq!(rig.result(), Some("0-1"));
}

/// Corpus games: take each back to a pseudo-random ply, set the board back, play the rest
/// again: the game recorded is the game played.
#[test]
fn corpus_games_taken_back_to_random_plies_replay_to_the_same_game() {
    take_back_corpus("standard", 25);
}

#[test]
fn chess960_games_taken_back_to_random_plies_replay_to_the_same_game() {
    take_back_corpus("chess960", 25);
}

fn take_back_corpus(sub: &str, n: usize) {
    let games = support::games(sub);
    assert!(!games.is_empty());
    let mut seed: u64 = 0x5eed_c0de;
    let mut checked = 0;
    for game in games.iter().filter(|g| g.moves.len() >= 2).take(n) {
        let start = game.start.clone();
        let mut pos = start.clone();
        let sans: Vec<String> = game
            .moves
            .iter()
            .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
            .collect();
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let k = (seed >> 33) as usize % game.moves.len();

        let mut rig = Rig::from(start.clone());
        let mut positions = vec![start.clone()];
        for m in &game.moves {
            let mut p = positions.last().unwrap().clone();
            p.play_unchecked(*m);
            rig.set_board(p.clone());
            positions.push(p);
        }
        assert_eq!(rig.sans(), sans, "played as is");
        let (ok, _) = rig.op(OperatorAction::TakeBack { ply: k as u32 });
        assert_eq!(ok, Ok(()));
        assert_eq!(rig.sans(), sans[..k].to_vec(), "taken back to {k}");
        for p in &positions[k..] {
            rig.set_board(p.clone());
        }
        assert_eq!(rig.sans(), sans, "taken back to {k} and played again");
        checked += 1;
    }
    assert!(checked >= 10, "{checked} games");
}

/// Corpus games: a move replaced by another and then put back gives the game played; when the
/// replacement breaks a later move it is refused and the game is unchanged.
#[test]
fn replacing_a_move_and_putting_it_back_gives_the_game_played() {
    let games = support::games("standard");
    let mut seed: u64 = 0xdead_beef;
    let (mut replaced, mut refused) = (0, 0);
    for game in games.iter().filter(|g| g.moves.len() >= 4).take(25) {
        let mut rig = Rig::from(game.start.clone());
        let mut positions = vec![game.start.clone()];
        for m in &game.moves {
            let mut p = positions.last().unwrap().clone();
            p.play_unchecked(*m);
            rig.set_board(p.clone());
            positions.push(p);
        }
        let played = rig.sans();
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // Near the end (few later moves to keep) or anywhere, in turn.
        let n = game.moves.len();
        let k = if replaced + refused < 12 {
            n - (seed >> 33) as usize % 4
        } else {
            1 + (seed >> 33) as usize % n
        };
        let before = &positions[k - 1];
        let legal = before.legal_moves();
        let Some(other) = legal
            .iter()
            .copied()
            .nth((seed >> 20) as usize % legal.len())
            .filter(|m| *m != game.moves[k - 1])
        else {
            continue;
        };
        let uci = |m| shakmaty::uci::UciMove::from_move(m, CastlingMode::Standard).to_string();
        rig.settle();
        let snapshot = state(&rig);
        let (ok, _) = rig.op(OperatorAction::ReplaceMove {
            ply: k as u32,
            uci: Some(uci(other)),
            san: None,
        });
        match ok {
            Ok(()) => {
                assert_eq!(rig.sans().len(), played.len());
                assert_ne!(rig.sans(), played);
                let (ok, _) = rig.op(OperatorAction::ReplaceMove {
                    ply: k as u32,
                    uci: Some(uci(game.moves[k - 1])),
                    san: None,
                });
                assert_eq!(ok, Ok(()));
                assert_eq!(rig.sans(), played, "replaced at {k} and put back");
                replaced += 1;
            }
            Err(CorrectionError::LaterMoveIllegal { .. }) => {
                assert_eq!(state(&rig), snapshot);
                refused += 1;
            }
            Err(e) => panic!("ply {k}: {e}"),
        }
    }
    assert!(
        replaced >= 3 && refused >= 3,
        "{replaced} replaced, {refused} refused"
    );
}
