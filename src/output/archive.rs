//! Finished games that left the live model, so that memory does not grow with the games of an
//! event (`docs/broadcast.md` §7, issue 22).
//!
//! A board's game leaves its [`super::model::BoardState`] when the board starts its next game:
//! from then on no event, correction or recovery can change it (they all act on a board's
//! latest game). Its record is written, as one JSON line, to a file that is unlinked as soon as
//! it is opened (it lives as long as the daemon, under the capture directory or the temporary
//! one); memory keeps a few numbers per game to find it (board, round, number, start time,
//! where its line is). An earlier round's PGN, LiveChessCloud files and API objects read the
//! game back from there and render it exactly as before. The file is rebuilt by every run (the
//! captures are the truth; the rebuild at start archives the finished games again).
//!
//! Should the file fail (a full disk), the records are kept in memory instead and that is
//! logged once: never a lost game.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::game::GameRecord;
use crate::core::observation::Micros;
use crate::core::stored::StoredGame;

/// One archived game: what finding it takes, and where its record is.
#[derive(Debug, Clone)]
pub struct Archived {
    /// The board's device id.
    pub board: Arc<str>,
    /// The round the game was started in.
    pub round: u32,
    /// Game number on the board.
    pub number: u32,
    /// When it started (board time).
    pub started_at: Micros,
    /// Whether it has a result.
    pub ended: bool,
    at: u64,
    len: u32,
}

/// Where the records are.
#[derive(Debug)]
enum Store {
    /// An unlinked file and its length.
    File(File, u64),
    /// In memory (no file could be made).
    Memory(Vec<u8>),
}

/// The finished games of a round model, oldest first.
#[derive(Debug, Default)]
pub struct Archive {
    dir: Option<PathBuf>,
    games: Vec<Archived>,
    store: Option<Store>,
}

/// Tells the archive files of one process apart.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

impl Archive {
    /// An empty archive whose file is made in `dir` (the temporary directory when `None`) when
    /// the first game comes.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Archive {
            dir,
            ..Archive::default()
        }
    }

    /// Every archived game, in the order they left the live model.
    pub fn games(&self) -> &[Archived] {
        &self.games
    }

    /// The last archived game of `board` started in round `round`.
    pub fn last_in(&self, board: &str, round: u32) -> Option<&Archived> {
        self.games
            .iter()
            .rev()
            .find(|a| a.round == round && &*a.board == board)
    }

    /// Keep `games` of `board`, each with the round it started in, as finished before every game of
    /// the board kept so far (games read back late, from a capture before its resume point):
    /// [`Archive::last_in`] still finds the board's latest.
    pub fn put_earlier(&mut self, board: &str, games: &[(u32, &GameRecord)]) {
        let before = self.games.len();
        for &(round, g) in games {
            self.put(board, round, g);
        }
        let added = self.games.len() - before;
        if let Some(first) = self.games.iter().position(|a| &*a.board == board)
            && first < before
        {
            self.games[first..].rotate_right(added);
        }
    }

    /// Keep `game` of `board`, started in round `round`.
    pub fn put(&mut self, board: &str, round: u32, game: &GameRecord) {
        let mut line = serde_json::to_vec(&StoredGame::of(game)).unwrap_or_default();
        line.push(b'\n');
        let store = self.store.get_or_insert_with(|| open(self.dir.as_ref()));
        let at = match store {
            Store::File(file, len) => match file.write_all(&line) {
                Ok(()) => {
                    let at = *len;
                    *len += line.len() as u64;
                    at
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot write the finished games' file: keeping them in memory");
                    *store = Store::Memory(Vec::new());
                    return self.put(board, round, game);
                }
            },
            Store::Memory(bytes) => {
                let at = bytes.len() as u64;
                bytes.extend_from_slice(&line);
                at
            }
        };
        let board = match self.games.iter().rev().find(|a| &*a.board == board) {
            Some(a) => a.board.clone(),
            None => Arc::from(board),
        };
        self.games.push(Archived {
            board,
            round,
            number: game.number,
            started_at: game.started_at,
            ended: game.ended(),
            at,
            len: line.len() as u32,
        });
    }

    /// The record of an archived game, read back. `None` (logged) when it cannot be read.
    pub fn game(&self, a: &Archived) -> Option<GameRecord> {
        let line: Cow<[u8]> = match self.store.as_ref()? {
            Store::File(file, _) => {
                let mut buf = vec![0; a.len as usize];
                if let Err(e) = file.read_exact_at(&mut buf, a.at) {
                    tracing::error!(error = %e, "cannot read the finished games' file");
                    return None;
                }
                Cow::Owned(buf)
            }
            Store::Memory(bytes) => {
                Cow::Borrowed(bytes.get(a.at as usize..a.at as usize + a.len as usize)?)
            }
        };
        let rebuilt = serde_json::from_slice::<StoredGame>(&line)
            .map_err(|e| e.to_string())
            .and_then(|s| s.game(a.number, a.started_at));
        match rebuilt {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::error!(board = %a.board, game = a.number, error = %e, "cannot read back a finished game");
                None
            }
        }
    }
}

/// The archive's file in `dir`, unlinked at once; memory when it cannot be made.
fn open(dir: Option<&PathBuf>) -> Store {
    let dir = dir.cloned().unwrap_or_else(std::env::temp_dir);
    let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".eboardd-finished-{}-{n}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .open(&path);
    match made {
        Ok(file) => {
            // Nothing outside this process reads it: gone with the process, even after kill -9.
            let _ = std::fs::remove_file(&path);
            Store::File(file, 0)
        }
        Err(e) => {
            tracing::error!(path = %path.display(), error = %e, "cannot make the finished games' file: keeping them in memory");
            Store::Memory(Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event::{ClockTimes, CompletedBy, EndReason};
    use shakmaty::{CastlingMode, Chess, Outcome, Position as _, uci::UciMove};

    fn game_of(number: u32, ucis: &[&str]) -> GameRecord {
        let mut g = GameRecord::new(number, Chess::default(), CastlingMode::Standard, None, 5);
        for (i, u) in ucis.iter().enumerate() {
            let mv = UciMove::from_ascii(u.as_bytes())
                .unwrap()
                .to_move(g.position())
                .unwrap();
            g.push(mv, 10 * i as i64);
            let last = g.moves.last_mut().unwrap();
            last.completed = Some(CompletedBy::Clock);
            last.clock = Some(ClockTimes {
                white: 1000 + i as u32,
                black: 2000,
            });
        }
        g
    }

    fn same(a: &GameRecord, b: &GameRecord) {
        assert_eq!(a.number, b.number);
        assert_eq!(a.started_at, b.started_at);
        assert_eq!(a.start_fen(), b.start_fen());
        assert_eq!(a.moves, b.moves);
        assert_eq!(a.result, b.result);
        assert_eq!(a.position().board(), b.position().board());
    }

    #[test]
    fn games_read_back_as_they_were_put() {
        let dir = std::env::temp_dir().join(format!("eboardd-archive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut archive = Archive::new(Some(dir.clone()));
        let mut first = game_of(1, &["e2e4", "e7e5", "g1f3"]);
        first.result = Some((
            Outcome::Known(shakmaty::KnownOutcome::Draw),
            EndReason::Arbiter,
        ));
        let second = game_of(2, &["d2d4"]);
        archive.put("board-1", 1, &first);
        archive.put("board-2", 1, &second);
        archive.put("board-1", 2, &second);
        // The file is unlinked at once: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let a = archive.last_in("board-1", 1).unwrap();
        same(&archive.game(a).unwrap(), &first);
        assert!(a.ended);
        same(
            &archive
                .game(archive.last_in("board-1", 2).unwrap())
                .unwrap(),
            &second,
        );
        assert!(archive.last_in("board-2", 2).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_file_the_games_stay_in_memory() {
        let mut archive = Archive::new(Some(PathBuf::from("/nonexistent/eboardd")));
        let g = game_of(1, &["e2e4", "c7c5"]);
        archive.put("b", 3, &g);
        same(&archive.game(&archive.games()[0]).unwrap(), &g);
    }
}
