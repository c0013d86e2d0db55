//! Moves recovered from the board's own memory (`Observation::Memory`): after the link was
//! away, a DGT board's cyclic log of field changes and clock presses tells exactly what was
//! played meanwhile, where the gap search (`recovery.rs`) can only guess from the position.
//!
//! The memory is replayed through a *sandbox*: a fresh [`BoardEngine`] with the same
//! [`EngineConfig`], fed a board dump at each anchor and every logged field change at synthetic
//! times, so that the engine's own rules find the games, set-ups, reversed boards and the moves
//! of every handling order; nothing here infers a move. The sandbox's last game is then aligned
//! with the live game when the board dump that follows the memory arrives
//! ([`BoardEngine::recover_from_memory`]): the dump must show what the sandbox's game ends with,
//! a legal move of it in progress, or a position up to [`FOLLOW_PLIES`] legal plies after it
//! (the memory is the board's history up to the moment it was read; the players go on while
//! it is sent, and the live engine then follows what they did as it would have live), the
//! sandbox game must start where the live game started, and the live moves must be a prefix of
//! the sandbox's (the live game's made-but-uncompleted last move may have been changed). The
//! moves beyond the live record are then recorded through the gap recovery's own path (`recover_with`), marked `recovered`, with
//! the clock times the memory's presses give. Anything else recovers nothing, and the dump goes
//! through the gap search as before.

use shakmaty::Color;

use super::super::event::{ClockTimes, CompletedBy, CoreEvent};
use super::super::game::{GameRecord, mover_of_ply};
use super::super::observation::{
    ClockSide, FieldArray, MemoryEntry, Micros, Observation, SquareReading,
};
use super::gap;
use super::recovery::Recovered;
use super::{BoardEngine, EngineConfig};

/// Synthetic time between a field change logged `quick` (less than about 250 ms after the
/// previous one) and the previous change. Below the ledger's noise window (300 ms: a piece put
/// back this soon is a sensor glitch, as a put-back within one scan is) and its scan window
/// (300 ms: a placement and a lift of the same kind of piece this close are one piece carried,
/// whichever the board reported first), but above the same-scan window (60 ms): the board
/// logs one entry per change, so two quick lifts are not taken for one knocked group.
pub const QUICK_STEP: Micros = 100_000;

/// Synthetic time between a field change not logged `quick` and the previous change (the real
/// gap was at least about 250 ms, how much more the memory does not say). Above the noise and
/// scan windows (300 ms: a lift and put-back this far apart is a touch, not a glitch) and the
/// default settle window (400 ms: a move that ends the game by rule is decided before the next
/// change), below the default displaced window and release hold (1 s each): within a move,
/// changes are seconds apart at most, and a board in between stays a move in progress, never
/// displaced pieces or a released move by timing alone. Below [`super::lifecycle::SETUP_STILL`]
/// (2 s): before a game, a set-up position is the anchor's board, not any board between two
/// changes.
pub const SLOW_STEP: Micros = 600_000;

/// Synthetic time before each anchor (a `Board` entry): longer than every window of the engine
/// but the kings signal's, so that the decisions pending from before are taken first.
pub const ANCHOR_STEP: Micros = 3_000_000;

/// The most plies the board may be ahead of its memory's end in the dump that follows it: the
/// gap search's own bound (a real board takes about 8 s to send a full memory at 9,600 baud, a
/// move and a reply at blitz; a loaded host reads it later still).
pub const FOLLOW_PLIES: u32 = gap::MAX_PLIES;

/// One clock press of the memory, where the sandbox stood when it was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PressMark {
    /// The sandbox game it was logged in (its start time, unique in the sandbox).
    game: Micros,
    /// That game's ply when the press was logged.
    ply: u32,
    /// The game reached `ply + 1` at the field changes logged right after the press (the first
    /// one, and the quick ones after it): the press came before the last field change of that
    /// move, within one scan, as a blitz press can.
    next_made: bool,
    /// The face that stopped.
    side: ClockSide,
    /// The time it showed.
    millis: u32,
    /// The time the other face showed at its own latest press in the same game, if any (a face
    /// that is stopped keeps showing it).
    other: Option<u32>,
}

/// What replaying a memory through the sandbox found.
#[derive(Debug, Clone)]
pub(super) struct MemoryReplay {
    /// The sandbox's last game, if any.
    last: Option<GameRecord>,
    /// The sandbox game before it, if any.
    before_last: Option<GameRecord>,
    presses: Vec<PressMark>,
}

/// The sandbox and where it stands in the memory.
struct Sandbox {
    engine: BoardEngine,
    t: Micros,
    /// The sensed board is known (an anchor was seen since the last `Unknown`).
    known: bool,
    /// An empty board anchor and the pieces logged onto it since (the pieces found at power-up
    /// or at a start-of-game tag, logged one by one in no particular order): fed as one board
    /// dump once the first other entry comes, since only then is the whole board known.
    batch: Option<Box<FieldArray>>,
    presses: Vec<PressMark>,
    /// A press whose next field changes are being watched (index into `presses`), with whether
    /// the first change after it was fed.
    open: Option<(usize, bool)>,
    /// Per side (left, right): the latest press in a game (game, millis).
    latest: [Option<(Micros, u32)>; 2],
    out: Vec<CoreEvent>,
}

fn side_index(side: ClockSide) -> usize {
    match side {
        ClockSide::Left => 0,
        ClockSide::Right => 1,
    }
}

impl Sandbox {
    fn new(cfg: &EngineConfig) -> Sandbox {
        Sandbox {
            engine: BoardEngine::new(cfg.clone()),
            t: 0,
            known: false,
            batch: None,
            presses: Vec::new(),
            open: None,
            latest: [None, None],
            out: Vec::new(),
        }
    }

    fn feed(&mut self, obs: &Observation) {
        self.engine.handle(self.t, obs, &mut self.out);
        // The sandbox's events are not published: only its games are used.
        self.out.clear();
    }

    fn flush(&mut self) {
        if let Some(fields) = self.batch.take() {
            self.feed(&Observation::BoardDump(fields));
        }
    }

    fn game_now(&self) -> Option<(Micros, u32)> {
        self.engine.games.last().map(|g| (g.started_at, g.ply()))
    }

    fn forget(&mut self) {
        self.known = false;
        self.batch = None;
        self.open = None;
    }

    fn entry(&mut self, entry: &MemoryEntry) {
        match entry {
            MemoryEntry::Board(fields) => self.board(fields),
            MemoryEntry::Field {
                index,
                reading,
                quick,
            } => {
                if self.known {
                    self.field(*index, *reading, *quick);
                }
            }
            MemoryEntry::Press { side, millis } => {
                if self.known {
                    self.press(*side, *millis);
                }
            }
            MemoryEntry::Unknown => self.forget(),
        }
    }

    /// A whole board in the memory: the anchor every later entry is read from. An empty one
    /// (the board's power-up) is filled by the placements that follow it.
    fn board(&mut self, fields: &FieldArray) {
        self.flush();
        self.open = None;
        self.t += ANCHOR_STEP;
        self.known = true;
        if fields.iter().all(|r| *r == SquareReading::Empty) {
            self.batch = Some(Box::new(*fields));
        } else {
            self.feed(&Observation::BoardDump(Box::new(*fields)));
        }
    }

    /// A field's change in the memory, `quick`ly after the last one or not.
    fn field(&mut self, index: u8, reading: SquareReading, quick: bool) {
        if index > 63 {
            // Not a field: what the board read is not known any more.
            self.forget();
            return;
        }
        let i = usize::from(index);
        if let Some(batch) = self.batch.as_mut()
            && reading != SquareReading::Empty
            && batch[i] == SquareReading::Empty
        {
            batch[i] = reading;
            return;
        }
        self.flush();
        if let Some((_, fed_first)) = self.open
            && fed_first
            && !quick
        {
            // Past the scan that may still belong to the press.
            self.open = None;
        }
        self.t += if quick { QUICK_STEP } else { SLOW_STEP };
        self.feed(&Observation::Field { index, reading });
        if let Some((p, _)) = self.open {
            self.open = Some((p, true));
            let mark = self.presses[p];
            if self.game_now() == Some((mark.game, mark.ply + 1)) {
                self.presses[p].next_made = true;
                self.open = None;
            }
        }
    }

    /// A clock press in the memory: marked where the game stands, with the other side's
    /// latest time in the same game.
    fn press(&mut self, side: ClockSide, millis: u32) {
        self.flush();
        self.open = None;
        let Some((game, ply)) = self.game_now() else {
            return;
        };
        let other = self.latest[side_index(side.other())]
            .filter(|&(g, _)| g == game)
            .map(|(_, m)| m);
        self.latest[side_index(side)] = Some((game, millis));
        self.presses.push(PressMark {
            game,
            ply,
            next_made: false,
            side,
            millis,
            other,
        });
        self.open = Some((self.presses.len() - 1, false));
    }
}

/// Replay `entries` (oldest first) through a sandbox engine with `cfg`. `None` when the memory
/// does not end with a known board (no anchor, or `Unknown` after the last one).
pub(super) fn replay(cfg: &EngineConfig, entries: &[MemoryEntry]) -> Option<MemoryReplay> {
    let mut sandbox = Sandbox::new(cfg);
    for entry in entries {
        sandbox.entry(entry);
    }
    sandbox.flush();
    if !sandbox.known {
        return None;
    }
    let mut games = std::mem::take(&mut sandbox.engine.games);
    let last = games.pop();
    let before_last = games.pop();
    Some(MemoryReplay {
        last,
        before_last,
        presses: sandbox.presses,
    })
}

/// How a sandbox game continues the live record.
struct Alignment {
    /// Index of the first sandbox move to record.
    from: usize,
    /// The live game's uncompleted last move is not the sandbox's: take it back first.
    retract: bool,
}

impl BoardEngine {
    /// A memory was read: replay it now, keep the result for the board dump that follows.
    /// Nothing is kept when no live game takes moves, or while the board is being set to an
    /// arbiter's correction (the board's memory knows nothing of corrections).
    pub(super) fn on_memory(&mut self, entries: &[MemoryEntry]) {
        self.memory = None;
        let live = self.active_game().is_some_and(|g| !g.over());
        if !live || self.correcting.is_some() {
            return;
        }
        self.memory = replay(&self.cfg, entries);
    }

    /// The board dump after a memory (already sensed): record the moves the memory
    /// shows were made beyond the live record. Returns whether the record changed.
    pub(super) fn recover_from_memory(
        &mut self,
        t: Micros,
        memory: MemoryReplay,
        out: &mut Vec<CoreEvent>,
    ) -> bool {
        if self.correcting.is_some() {
            return false;
        }
        let Some(last) = memory.last.as_ref() else {
            return false;
        };
        // The memory is the board's history up to the moment the board read it; the dump
        // comes after it (a real board takes seconds to send its memory at 9,600 baud) and may
        // show pieces lifted since, a move made since, or a reply to it: a position that the
        // memory's game ends with, a legal move in progress from it, or up to
        // [`FOLLOW_PLIES`] legal plies after it, which the live engine then follows or
        // recovers as it would have live. Anything else (a memory that is not this board's
        // history) recovers nothing here; the dump goes through the gap search.
        if !self.follows(last) {
            return false;
        }
        // The game on the board now; or, when a start position was set up after it (a new game
        // without a move yet), the game before it, which the live engine then ends by seeing
        // that start position, as it would have live.
        let (game, aligned) = match self.align(last) {
            Some(a) => (last, a),
            None => match memory.before_last.as_ref().filter(|_| last.ply() == 0) {
                Some(prev) => match self.align(prev) {
                    Some(a) => (prev, a),
                    None => return false,
                },
                None => return false,
            },
        };
        let presses = self.memory_presses(game, &memory.presses);
        let press_of = |ply: usize| presses.get(ply).copied().flatten();
        let live_ply = self.active_game().map_or(0, |g| g.ply()) as usize;
        let confirm = match press_of(live_ply) {
            Some(clock) if !aligned.retract && self.has_uncompleted() => Some(clock),
            _ => None,
        };
        let moves: Vec<Recovered> = game.moves[aligned.from..]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let press = press_of(aligned.from + i + 1);
                Recovered {
                    mv: r.mv,
                    pressed: press.is_some(),
                    clock: press.flatten(),
                }
            })
            .collect();
        if !aligned.retract && confirm.is_none() && moves.is_empty() {
            return false;
        }
        // Every press is in the memory: one still pending from before the gap is in it too.
        self.pending_press = None;
        self.early_press = None;
        if let Some(clock) = confirm {
            // Seen being made; its player's press is in the memory: judged as at that press.
            self.complete(t, CompletedBy::Clock, clock, out);
            self.moves_since_press = 0;
        }
        // What was seen of the turn in progress belongs to moves the memory now records.
        self.taken_back = None;
        self.changed = None;
        if aligned.retract {
            // The made move was changed (or taken back) before it was completed.
            self.retract(t, out);
        }
        if !moves.is_empty() {
            // The clock readings from before the gap say nothing about who thought meanwhile.
            self.in_phase_from = None;
            self.recover_with(t, &moves, out);
        }
        self.ledger.clear();
        true
    }

    /// Whether the sensed board (the dump) can follow what `game` ends with: its position, or
    /// what [`FOLLOW_PLIES`] legal plies or fewer lead to, but for up to [`gap::IN_HAND`]
    /// pieces lifted (the next move being made).
    fn follows(&self, game: &GameRecord) -> bool {
        let board = self.sensed.board(self.orientation);
        gap::reaches_with_lifts(game.position(), &board, FOLLOW_PLIES)
    }

    /// How the sandbox `game` continues the live game, if it is the live game: same start
    /// position, castling mode and orientation, and the live moves a prefix of its moves (but
    /// for an uncompleted live last move, which the sandbox may have seen changed).
    fn align(&self, game: &GameRecord) -> Option<Alignment> {
        let live = self.active_game()?;
        let same_start = game.start_fen() == live.start_fen()
            && game.mode == live.mode
            && game.reversed == live.reversed;
        if !same_start {
            return None;
        }
        let k = live.moves.len();
        let common = live
            .moves
            .iter()
            .zip(&game.moves)
            .take_while(|(a, b)| a.mv == b.mv)
            .count();
        if common == k {
            Some(Alignment {
                from: k,
                retract: false,
            })
        } else if common + 1 == k && live.uncompleted_last().is_some() {
            Some(Alignment {
                from: k - 1,
                retract: true,
            })
        } else {
            None
        }
    }

    /// Which moves of `game` (index = ply) the memory's presses completed, with the clock
    /// times after them when known: a press completes its player's last move, or the move its
    /// player makes within the scan after it; the mover's time is the press's, the opponent's
    /// the one their face showed at their latest press in the game (unknown before it). Colours
    /// from the live clock's White side (configured or learned); no move's press is known when
    /// that side is not.
    fn memory_presses(
        &self,
        game: &GameRecord,
        presses: &[PressMark],
    ) -> Vec<Option<Option<ClockTimes>>> {
        let n = game.moves.len();
        let mut out = vec![None; n + 1];
        for p in presses.iter().filter(|p| p.game == game.started_at) {
            let Some(color) = self.clock.color_of(p.side) else {
                continue;
            };
            let ply = if p.ply >= 1 && mover_of_ply(game.start(), p.ply) == color {
                p.ply
            } else if p.next_made && mover_of_ply(game.start(), p.ply + 1) == color {
                p.ply + 1
            } else {
                // A press without a move of its player: no move's time.
                continue;
            };
            let Some(slot) = out.get_mut(ply as usize).filter(|_| ply >= 1) else {
                continue;
            };
            // A later press for the same move is the one after it was made for good.
            *slot = Some(p.other.map(|other| match color {
                Color::White => ClockTimes {
                    white: p.millis,
                    black: other,
                },
                Color::Black => ClockTimes {
                    white: other,
                    black: p.millis,
                },
            }));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::sensed::Orientation;
    use shakmaty::{Chess, Position, san::San};

    fn fields(pos: &Chess) -> Box<FieldArray> {
        let mut f = [SquareReading::Empty; 64];
        for (sq, p) in pos.board().iter() {
            f[usize::from(Orientation::Normal.index_of(sq))] = SquareReading::Piece(p);
        }
        Box::new(f)
    }

    /// The field changes of `sans` played from the start, lift then place, none quick.
    fn memory(sans: &[&str]) -> Vec<MemoryEntry> {
        let mut pos = Chess::default();
        let mut out = vec![MemoryEntry::Board(fields(&pos))];
        for s in sans {
            let m = s.parse::<San>().unwrap().to_move(&pos).unwrap();
            let before = fields(&pos);
            pos.play_unchecked(m);
            let after = fields(&pos);
            // Lifts first, then placements.
            let changed: Vec<usize> = (0..64).filter(|&i| before[i] != after[i]).collect();
            for &i in changed
                .iter()
                .filter(|&&i| after[i] == SquareReading::Empty)
            {
                out.push(field(i, SquareReading::Empty));
            }
            for &i in changed
                .iter()
                .filter(|&&i| after[i] != SquareReading::Empty)
            {
                out.push(field(i, after[i]));
            }
        }
        out
    }

    fn field(i: usize, reading: SquareReading) -> MemoryEntry {
        MemoryEntry::Field {
            index: i as u8,
            reading,
            quick: false,
        }
    }

    fn sans(game: &GameRecord) -> Vec<String> {
        game.moves.iter().map(|m| m.san.clone()).collect()
    }

    #[test]
    fn the_sandbox_reads_the_moves_of_the_memory() {
        let r = replay(
            &EngineConfig::default(),
            &memory(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6", "O-O"]),
        )
        .expect("known");
        let last = r.last.expect("a game");
        assert_eq!(sans(&last), ["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6", "O-O"]);
        assert!(r.before_last.is_none());
    }

    #[test]
    fn no_anchor_or_unknown_at_the_end_is_no_replay() {
        let mut m = memory(&["e4", "e5"]);
        m.remove(0);
        assert!(replay(&EngineConfig::default(), &m).is_none());
        let mut m = memory(&["e4", "e5"]);
        m.push(MemoryEntry::Unknown);
        assert!(replay(&EngineConfig::default(), &m).is_none());
        assert!(replay(&EngineConfig::default(), &[]).is_none());
    }

    #[test]
    fn an_empty_anchor_and_the_pieces_logged_onto_it_are_one_board() {
        // Power-up: empty board, then the start position's 32 pieces in any order, quick.
        let start = fields(&Chess::default());
        let mut m = vec![MemoryEntry::Board(Box::new([SquareReading::Empty; 64]))];
        for i in (0..64).rev().filter(|&i| start[i] != SquareReading::Empty) {
            m.push(MemoryEntry::Field {
                index: i as u8,
                reading: start[i],
                quick: true,
            });
        }
        m.extend(memory(&["d4", "d5"]).into_iter().skip(1));
        let r = replay(&EngineConfig::default(), &m).expect("known");
        assert_eq!(sans(&r.last.expect("a game")), ["d4", "d5"]);
    }

    #[test]
    fn a_press_before_the_last_change_belongs_to_the_move_it_completes() {
        // 1. e4, with White's press logged between the lift and the placement.
        let mut m = memory(&["e4"]);
        let place = m.pop().expect("placement");
        m.push(MemoryEntry::Press {
            side: ClockSide::Left,
            millis: 60_000,
        });
        m.push(place);
        let r = replay(&EngineConfig::default(), &m).expect("known");
        assert_eq!(r.presses.len(), 1);
        assert_eq!(r.presses[0].ply, 0);
        assert!(r.presses[0].next_made);
        assert_eq!(r.presses[0].other, None);
    }
}
