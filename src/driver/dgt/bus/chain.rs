//! [`Chain`]: the session (sans-IO) of a chain of DGT boards on one port, in DGT's bus mode
//! (`docs/dgt-protocol.md` §1.9, §5.14), the session of the [`DgtBus`](super::DgtBus) driver
//! (`bus/driver.rs`, with the timing of the commands on the line); what it keeps of each board
//! is a `Member` (`bus/member.rs`).
//!
//! Tournaments chain about a dozen boards on one serial or USB port; every board hears every
//! command and answers only those addressed to it. The session:
//!
//! - **finds the boards**: PING to address 0, which every board answers after its own random
//!   delay of up to 1.1 s, listened to for [`DISCOVERY_WINDOW`]; then IGNORE_NEXT_BUS_PING to
//!   every board found (it answers at once and stays quiet at the next PING to 0) and PING to 0
//!   again, until a round finds no new board and sees no collision (garbled replies); at least
//!   two rounds at the start, because a board left in single-board mode takes the first bus
//!   command as the switch back to bus mode and does not answer it. A round runs again every
//!   [`REDISCOVER_EVERY`] to find boards plugged into the chain later;
//! - **polls** the boards one after the other: SEND_CHANGES (the board's memory entries since
//!   the last call: its field changes, in order) and SEND_CLK (the clock's reading; once in
//!   [`CLOCKLESS_EVERY`] turns for a board without a clock) each cycle, each command sent the moment the previous reply is complete, so that the cycle is
//!   what the bytes need at 9600 baud plus the boards' reply times;
//! - **keeps one talker on the line**: every board answers on the one return line, and two
//!   replies at once garble each other; a reply that comes in bad or cut short is waited out
//!   until the line has been quiet for [`REPLY_QUIET`] (one that never begins, [`REPLY_GAP`])
//!   before the next command goes out;
//! - **asks again for what did not come through**: a packet of changes always with
//!   REPEAT_CHANGES, until it comes in whole (a new SEND_CHANGES would lose it), the other
//!   commands as they were; [`tries_in_a_turn`] tries in a board's turn, then the next board's
//!   turn comes (one bad board does not starve the others) and the board's next turn asks
//!   again. A turn whose changes did not come sends no dump (it would be ahead of the
//!   changes). A board that answers, however garbled, stays; one that leaves
//!   [`LOST_AFTER`] exchanges in a row without a byte is disconnected (its game kept) and found
//!   again by a later discovery;
//! - **recovers from the boards' memory**: a board found with a game in progress (after a cable
//!   was pulled, the chain powered down and up, the daemon restarted) is asked for
//!   SEND_FROM_START (every change since the start of its game) before its pending changes and
//!   a board dump; the decoder joins the two into one [`crate::core::observation::Observation::
//!   Memory`] from which the core recovers the moves made meanwhile exactly. When the core
//!   starts a game, the board is told SET_START_GAME, so that its memory marks the game's
//!   start;
//! - **reads the memory again** of a board ahead of its record by moves no single sequence
//!   explains (the core's `moves_missing`: changes lost beyond repair), at most
//!   [`MEMORY_RECALLS`] times, [`RECALL_EVERY`] apart, so that the core recovers the moves
//!   exactly, as a single board does with its memory; a memory that does not come through
//!   whole is asked for again in the board's next turns, [`MEMORY_TURNS`] in all;
//! - **repairs** a board whose changes settle unexplained by the game with SEND_BRD.
//!
//! It never sends a single-board command (the first one would take every board of the chain out
//! of bus mode, and all of them would answer it at once): every byte it writes is a
//! [`BusCommand`], and clock texts are not shown on a chain.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::member::Member;
use super::{BusCommand, ReplyKind};
use crate::core::event::{CoreEvent, EventKind};
use crate::core::observation::FieldArray;
use crate::driver::port::{Action, Boards, Note, Session, SessionConfig, Unit};
use crate::driver::{DriverReply, Message, SessionMessage};

pub use super::driver::{
    BYTE_TIME, DISCOVERY_WINDOW, MAX_TRIES, REPLY_GAP, REPLY_QUIET, START_GAME_TIME, reply_gap,
    tries_in_a_turn,
};

/// How often the chain is searched for boards plugged in later.
pub const REDISCOVER_EVERY: Duration = Duration::from_secs(30);
/// Unanswered exchanges in a row after which a board counts as gone.
pub const LOST_AFTER: u32 = 3;
/// Field changes settled this long on a board the game does not explain: a board dump.
pub const SETTLE_DUMP: Duration = Duration::from_millis(400);
/// Discovery rounds at most in one search (collisions can keep a round inconclusive).
const MAX_ROUNDS: u32 = 8;
/// Time between two memory reads for moves missing on one board.
pub const RECALL_EVERY: Duration = Duration::from_secs(5);
/// Turns in which a board's memory (SEND_FROM_START) is asked for, for one recovery, before it
/// is given up (a long memory on a line that loses bytes may never come through whole).
pub const MEMORY_TURNS: u32 = 8;
/// Memory reads a board gets while the core reports moves missing on it (ahead of the record
/// by moves no single sequence explains), at most one every [`RECALL_EVERY`].
pub const MEMORY_RECALLS: u32 = 3;
/// A board whose clock reading said "no clock" is asked for its clock once in this many turns.
pub const CLOCKLESS_EVERY: u32 = 8;

/// What the line is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Nothing asked.
    Idle,
    /// A command sent to one board, its reply awaited until `deadline`: [`REPLY_GAP`] after
    /// the command, moved to [`REPLY_QUIET`] after the last byte once bytes come in (the next
    /// command goes out only when the line is quiet: never while a reply may still come).
    Asking {
        address: u16,
        cmd: BusCommand,
        tries: u32,
        deadline: Instant,
        /// Bytes of the reply to this try have come in.
        some: bool,
        /// Bytes came in for some try of this exchange: the board is there.
        heard: bool,
    },
    /// A PING to address 0 sent: every board may answer until `until`.
    Listening { until: Instant },
}

/// A search of the chain for boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Search {
    round: u32,
    /// Rounds that must run whatever they find (the boards' wake-up at the start).
    at_least: u32,
    /// Found a new board, or saw a garbled reply, in this round.
    news: bool,
}

/// Counters of a chain session (for logs, benchmarks and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChainStats {
    /// Complete polling cycles (every streaming board asked once).
    pub cycles: u64,
    /// Commands sent (resends included).
    pub commands: u64,
    /// Commands sent again after a bad, cut-short or missing reply.
    pub resends: u64,
    /// Discovery rounds.
    pub rounds: u64,
    /// Boards found (again, after a loss, counted again).
    pub found: u64,
    /// Boards lost.
    pub lost: u64,
    /// Replies that came in bad or cut short (each waited out before the next command).
    pub bad_replies: u64,
    /// Memory reads asked for (SEND_FROM_START sent, resends included).
    pub memory_reads: u64,
    /// Frames the decoder rejected while a board was asked.
    pub bad_frames: u64,
}

/// What a session knows of its boards before any is open.
struct NoBoards;

impl Boards for NoBoards {
    fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
        true
    }
    fn game_in_progress(&self, _unit: Unit) -> bool {
        false
    }
    fn at_game_start(&self, _unit: Unit) -> bool {
        false
    }
    fn away_for(&self, _unit: Unit) -> Option<Duration> {
        None
    }
}

/// The session of a chain of DGT boards in bus mode.
#[derive(Debug)]
pub struct Chain {
    members: BTreeMap<u16, Member>,
    line: Line,
    search: Option<Search>,
    next_search: Option<Instant>,
    /// The board whose turn it is.
    current: Option<u16>,
    /// Boards asked since the last complete cycle.
    cycle_seen: usize,
    /// Counters.
    pub stats: ChainStats,
}

impl Chain {
    /// A session for a chain on a port just opened.
    pub fn new(_cfg: SessionConfig) -> Chain {
        Chain {
            members: BTreeMap::new(),
            line: Line::Idle,
            search: None,
            next_search: None,
            current: None,
            cycle_seen: 0,
            stats: ChainStats::default(),
        }
    }

    fn send(
        &mut self,
        now: Instant,
        address: u16,
        cmd: BusCommand,
        tries: u32,
        heard: bool,
        out: &mut Vec<Action>,
    ) {
        self.stats.commands += 1;
        if tries > 1 {
            self.stats.resends += 1;
        }
        if cmd == BusCommand::SendFromStart {
            self.stats.memory_reads += 1;
        }
        let bytes = cmd.encode(address).to_vec();
        let written = BYTE_TIME * bytes.len() as u32;
        if address == 0 {
            out.push(Action::Send { unit: None, bytes });
            self.line = Line::Listening {
                until: now + written + DISCOVERY_WINDOW,
            };
        } else {
            out.push(Action::Send {
                unit: Some(address),
                bytes,
            });
            self.line = Line::Asking {
                address,
                cmd,
                tries,
                deadline: now + written + reply_gap(cmd),
                some: false,
                heard,
            };
        }
    }

    /// Starts a search of the chain.
    fn search(&mut self, at_least: u32) {
        self.search = Some(Search {
            round: 0,
            at_least,
            news: false,
        });
        for m in self.members.values_mut() {
            m.ignoring = false;
        }
    }

    /// The line is free: the next command.
    fn next(&mut self, now: Instant, boards: &dyn Boards, out: &mut Vec<Action>) {
        if self.search.is_none() && self.next_search.is_some_and(|t| now >= t) {
            self.search(1);
        }
        match self.search {
            Some(search) => self.next_in_search(now, search, out),
            None => self.next_in_turn(now, boards, out),
        }
    }

    /// A search's next command: boards found keep quiet at the next PING to 0 (an
    /// IGNORE_NEXT_BUS_PING to each in turn), then the round's PING to every board.
    fn next_in_search(&mut self, now: Instant, search: Search, out: &mut Vec<Action>) {
        if let Some((&address, _)) = self.members.iter().find(|(_, m)| !m.ignoring) {
            if let Some(m) = self.members.get_mut(&address) {
                m.ignoring = true;
            }
            self.send(now, address, BusCommand::IgnoreNextPing, 1, false, out);
            return;
        }
        self.stats.rounds += 1;
        self.search = Some(Search {
            round: search.round + 1,
            news: false,
            ..search
        });
        self.send(now, 0, BusCommand::Ping, 1, false, out);
    }

    /// Polling: the current board's turn, then the next board's.
    fn next_in_turn(&mut self, now: Instant, boards: &dyn Boards, out: &mut Vec<Action>) {
        loop {
            let Some(address) = self.current.or_else(|| self.first_streaming()) else {
                self.line = Line::Idle;
                return;
            };
            self.current = Some(address);
            let Some(m) = self.members.get_mut(&address) else {
                self.current = None;
                continue;
            };
            if let Some(cmd) = m.turn.pop_front() {
                if goes_out_now(m, address, cmd, boards) {
                    self.send(now, address, cmd, 1, false, out);
                    return;
                }
                continue;
            }
            if self.end_turn(address).is_none() {
                self.line = Line::Idle;
                return;
            }
        }
    }

    /// The turn of the board at `address` is over: the cycle is counted when every streaming
    /// board had its turn, and the next board's turn begins. That board, `None` when no board
    /// streams.
    fn end_turn(&mut self, address: u16) -> Option<u16> {
        self.cycle_seen += 1;
        let next = self.next_streaming(address);
        if self.cycle_seen >= self.streaming() {
            self.stats.cycles += 1;
            self.cycle_seen = 0;
        }
        self.current = next;
        if let Some(n) = next
            && let Some(m) = self.members.get_mut(&n)
        {
            m.begin_turn();
        }
        next
    }

    fn streaming(&self) -> usize {
        self.members.values().filter(|m| m.opened).count()
    }

    fn first_streaming(&mut self) -> Option<u16> {
        let first = self
            .members
            .iter()
            .find(|(_, m)| m.opened)
            .map(|(a, _)| *a)?;
        if let Some(m) = self.members.get_mut(&first) {
            m.begin_turn();
        }
        Some(first)
    }

    /// The streaming board after `address`, round the chain.
    fn next_streaming(&self, address: u16) -> Option<u16> {
        let open = |(a, m): (&u16, &Member)| m.opened.then_some(*a);
        self.members
            .range(address + 1..)
            .find_map(open)
            .or_else(|| self.members.iter().find_map(open))
    }

    /// The exchange of `cmd` with `address` failed after every try: `heard` when replies came,
    /// all bad or cut short (the board is there; what it was asked for is asked again in its
    /// next turn, so that the other boards get their turns meanwhile), else unanswered.
    fn unanswered(&mut self, address: u16, cmd: BusCommand, heard: bool, out: &mut Vec<Action>) {
        self.line = Line::Idle;
        let Some(m) = self.members.get_mut(&address) else {
            return;
        };
        if heard {
            m.missed = 0;
            match cmd {
                // The board sent its changes: the same packet again, never new ones.
                BusCommand::SendChanges | BusCommand::RepeatChanges => m.repeat_pending = true,
                BusCommand::SendBoard => m.ask(BusCommand::SendBoard),
                BusCommand::SendFromStart => {
                    m.ask(BusCommand::SendFromStart);
                    m.ask(BusCommand::SendBoard);
                }
                _ => {}
            }
            return;
        }
        m.missed += 1;
        if m.opened {
            out.push(Action::Note {
                unit: address,
                note: Note::NoReply { missed: m.missed },
            });
        }
        if m.missed < LOST_AFTER {
            if matches!(cmd, BusCommand::SendChanges | BusCommand::RepeatChanges) {
                // The board may have sent a packet that never came: asked for again.
                m.repeat_pending = true;
            }
            if cmd == BusCommand::SendFromStart {
                m.ask(BusCommand::SendFromStart);
                m.ask(BusCommand::SendBoard);
            }
            return;
        }
        let opened = m.opened;
        self.members.remove(&address);
        if self.current == Some(address) {
            self.current = None;
        }
        self.stats.lost += 1;
        if opened {
            out.push(Action::Lost {
                unit: address,
                why: format!("no answer to {LOST_AFTER} exchanges in a row"),
            });
        }
    }

    /// The reply to the command in flight is bad, cut short, or missing, and the line is quiet:
    /// ask again or give up.
    fn retry(&mut self, now: Instant, out: &mut Vec<Action>) {
        let Line::Asking {
            address,
            cmd,
            tries,
            some,
            heard,
            ..
        } = self.line
        else {
            return;
        };
        if some {
            self.stats.bad_replies += 1;
        }
        if cmd == BusCommand::SetStartGame && (some || heard) {
            // The board wrote the mark (its reply came, spoilt): writing it again would mark
            // the start wherever the pieces stand now.
            self.line = Line::Idle;
            return;
        }
        if tries >= tries_in_a_turn(cmd) {
            self.unanswered(address, cmd, heard || some, out);
            return;
        }
        // Changes are asked for again with REPEAT_CHANGES, whatever came: when the board sent
        // them, a new SEND_CHANGES would lose them; when it did not hear the command, its last
        // packet comes again, which leaves every field as it was (each field ends as the packet
        // last wrote it), and its new changes stay for the next SEND_CHANGES.
        let again = match cmd {
            BusCommand::SendChanges | BusCommand::RepeatChanges => BusCommand::RepeatChanges,
            c => c,
        };
        self.send(now, address, again, tries + 1, heard || some, out);
    }
    /// Replies heard while every board may answer a PING to address 0: the boards that
    /// answered are found; garbled replies call for another round.
    fn heard_in_search(
        &mut self,
        now: Instant,
        until: Instant,
        msgs: &[Message],
        bad_frames: u64,
        out: &mut Vec<Action>,
    ) {
        // A reply still coming in is heard to its end.
        self.line = Line::Listening {
            until: until.max(now + REPLY_QUIET),
        };
        for m in msgs {
            let Message::Session(SessionMessage::Driver(DriverReply::DgtBus(r))) = m else {
                continue;
            };
            if r.kind != ReplyKind::Ping || r.address == 0 {
                continue;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = self.members.entry(r.address) {
                e.insert(Member::new());
                self.stats.found += 1;
                if let Some(s) = &mut self.search {
                    s.news = true;
                }
                out.push(Action::Found {
                    unit: r.address,
                    serial: format!("{:05}", r.address),
                    version: None,
                });
            }
        }
        if bad_frames > 0
            && let Some(s) = &mut self.search
        {
            // Replies garbled each other: another round gives them new delays.
            s.news = true;
        }
    }

    /// Bytes from the board asked: its reply came whole (the next command goes out), or is
    /// still coming in, or came in bad or cut short (waited out until the line is quiet).
    fn heard_from_asked(
        &mut self,
        now: Instant,
        msgs: &[Message],
        bad_frames: u64,
        boards: &dyn Boards,
        out: &mut Vec<Action>,
    ) {
        let Line::Asking {
            address,
            cmd,
            tries,
            heard,
            ..
        } = self.line
        else {
            return;
        };
        if let Some(m) = self.members.get_mut(&address) {
            for msg in msgs {
                m.observed(now, msg);
            }
        }
        let done = msgs.iter().any(|msg| {
            matches!(msg, Message::Session(SessionMessage::Driver(DriverReply::DgtBus(r)))
                if r.address == address && r.kind == cmd.reply())
        });
        if done {
            self.answered(address, cmd);
            self.line = Line::Idle;
            self.next(now, boards, out);
        } else {
            // Bytes of the reply are coming in, or a bad or cut-short reply is still on the
            // line: the next command (the same again, or the next one) waits until the line
            // has been quiet for a moment, so that no two replies overlap.
            if bad_frames > 0 {
                self.stats.bad_frames += bad_frames;
            }
            self.line = Line::Asking {
                address,
                cmd,
                tries,
                deadline: now + REPLY_QUIET,
                some: true,
                heard,
            };
        }
    }

    /// The reply to `cmd` came whole from the board at `address`: what it settles.
    fn answered(&mut self, address: u16, cmd: BusCommand) {
        let Some(m) = self.members.get_mut(&address) else {
            return;
        };
        m.missed = 0;
        match cmd {
            BusCommand::SendChanges => {
                m.repeat_pending = false;
                m.stale = false;
            }
            BusCommand::RepeatChanges => {
                m.repeat_pending = false;
                m.stale = true;
                // An earlier packet: the changes made since are asked for at once (once a
                // turn), before this turn's dump.
                if !m.refreshed {
                    m.refreshed = true;
                    m.turn.push_front(BusCommand::SendChanges);
                }
            }
            BusCommand::SendFromStart => m.memory_turns = 0,
            _ => {}
        }
    }
}

/// Whether `cmd`, next in the turn of the board at `address`, goes out now (else it is left
/// for a later turn, or dropped).
fn goes_out_now(m: &mut Member, address: u16, cmd: BusCommand, boards: &dyn Boards) -> bool {
    if (m.repeat_pending || m.stale) && cmd == BusCommand::SendBoard {
        // The board's changes did not come through in this turn, or only an earlier packet of
        // them did (REPEAT_CHANGES): a dump would be ahead of them (a gap the game cannot
        // explain). It waits for a turn whose changes came.
        m.ask(cmd);
        return false;
    }
    if cmd == BusCommand::SetStartGame {
        m.start_pending = false;
        // The mark logs the pieces where they stand: only while the record is at the game's
        // start and the board showed it last. It does not wait for a packet of changes still
        // pending: on a bad line a long packet (the 71 bytes of a board's power-up) can take
        // tens of seconds to come through whole, the game is under way by then, and a game
        // never marked has no memory to recover from (SEND_FROM_START reads from the last
        // mark). A move the pending packet hides, marked as the start, is no start position:
        // the memory then recovers nothing, as an unmarked one. Before the board's first dump
        // came through (its shadow unknown), the record's start, seen from its changes, is all
        // there is to go by.
        return boards.at_game_start(address)
            && m.shadow
                .as_ref()
                .is_none_or(|f| boards.explains(address, f));
    }
    true
}

impl Session for Chain {
    fn open(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.search(2);
        self.next(now, &NoBoards, out);
    }

    fn listener(&self) -> Option<Unit> {
        match self.line {
            Line::Asking { address, .. } => Some(address),
            _ => None,
        }
    }

    fn received(
        &mut self,
        now: Instant,
        from: Option<Unit>,
        msgs: &[Message],
        bad_frames: u64,
        boards: &dyn Boards,
        out: &mut Vec<Action>,
    ) {
        match self.line {
            Line::Listening { until } => self.heard_in_search(now, until, msgs, bad_frames, out),
            Line::Asking { address, .. } if from == Some(address) => {
                self.heard_from_asked(now, msgs, bad_frames, boards, out);
            }
            Line::Asking { .. } | Line::Idle => {}
        }
    }

    fn opened(&mut self, now: Instant, unit: Unit, boards: &dyn Boards, out: &mut Vec<Action>) {
        let Some(m) = self.members.get_mut(&unit) else {
            return;
        };
        m.opened = true;
        m.ask(BusCommand::SendVersion);
        if boards.game_in_progress(unit) {
            out.push(Action::Note {
                unit,
                note: Note::MemoryAsked,
            });
            m.ask_memory();
        }
        // The changes pending since the last call (joined to the memory), then the whole board.
        m.ask(BusCommand::SendChanges);
        m.ask(BusCommand::SendBoard);
        if self.line == Line::Idle && self.search.is_none() {
            self.next(now, boards, out);
        }
    }

    fn poll(&mut self, now: Instant, boards: &dyn Boards, out: &mut Vec<Action>) {
        // Boards whose changes settled on a position the game does not explain get a dump.
        for (&address, m) in self.members.iter_mut() {
            if m.opened
                && !m.settled_checked
                && m.last_field
                    .is_some_and(|t| now.duration_since(t) >= SETTLE_DUMP)
            {
                m.settled_checked = true;
                if m.shadow
                    .as_ref()
                    .is_some_and(|s| !boards.explains(address, s))
                {
                    m.ask(BusCommand::SendBoard);
                }
            }
            // A board ahead of the record by moves no single sequence explains (changes lost
            // beyond repair): its memory tells which, as it does after a reconnection.
            if m.opened
                && m.recalls > 0
                && m.memory_turns == 0
                && m.last_recall
                    .is_none_or(|t| now.duration_since(t) >= RECALL_EVERY)
                && boards.moves_missing(address)
            {
                m.recalls -= 1;
                m.last_recall = Some(now);
                m.ask_memory();
                out.push(Action::Note {
                    unit: address,
                    note: Note::MemoryAskedAgain,
                });
            }
        }
        match self.line {
            Line::Asking { deadline, .. } if now >= deadline => {
                self.retry(now, out);
                if self.line == Line::Idle {
                    self.next(now, boards, out);
                }
            }
            Line::Listening { until } if now >= until => {
                self.line = Line::Idle;
                if let Some(s) = self.search {
                    let again = (s.news || s.round < s.at_least) && s.round < MAX_ROUNDS;
                    if again {
                        for m in self.members.values_mut() {
                            m.ignoring = false;
                        }
                    } else {
                        self.search = None;
                        self.next_search = Some(now + REDISCOVER_EVERY);
                    }
                }
                self.next(now, boards, out);
            }
            Line::Idle => self.next(now, boards, out),
            _ => {}
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.line {
            Line::Asking { deadline, .. } => Some(deadline),
            Line::Listening { until } => Some(until),
            Line::Idle => self.next_search,
        }
    }

    fn events(&mut self, _now: Instant, unit: Unit, events: &[CoreEvent], _out: &mut Vec<Action>) {
        if events
            .iter()
            .any(|e| matches!(e.kind, EventKind::GameStarted { .. }))
            && let Some(m) = self.members.get_mut(&unit)
        {
            // The board's memory marks the game's start (and logs every piece), for a recovery
            // from SEND_FROM_START later: in this turn, when the board's turn is on (before its
            // clock, or last when this turn does not read it: the first move may come before
            // its next turn), else in its next.
            m.start_pending = true;
            if self.current == Some(unit) && !m.turn.contains(&BusCommand::SetStartGame) {
                match m.turn.iter().position(|c| *c == BusCommand::SendClock) {
                    Some(at) => m.turn.insert(at, BusCommand::SetStartGame),
                    None => m.turn.push_back(BusCommand::SetStartGame),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
