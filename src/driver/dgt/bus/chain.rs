//! [`DgtBus`]: a chain of DGT boards on one port, in DGT's bus mode (`docs/dgt-protocol.md`
//! §1.9, §5.14), and [`Chain`], its session (sans-IO).
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

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::{BusCommand, BusLineStream, BusStream, ReplyKind};
use crate::core::event::{CoreEvent, EventKind};
use crate::core::observation::{FieldArray, Observation};
use crate::driver::port::{Action, Boards, Note, Session, SessionConfig, Unit};
use crate::driver::{BoardDriver, Decoder, DriverReply, Message, SessionMessage, Transport};

/// The driver's name in capture headers and events (never change it: captures name it).
pub const NAME: &str = "dgt-bus";

/// Time a byte takes on the line at 9600 baud, 8N1 (ten bits).
pub const BYTE_TIME: Duration = Duration::from_micros(1042);
/// The longest pause before a reply before it counts as missing: DGT's header suggests 80 ms (a
/// board answers within milliseconds, up to 20 ms while it writes its memory).
pub const REPLY_GAP: Duration = Duration::from_millis(80);
/// How long after SET_START_GAME the board's START_GAME_WRITTEN comes: "about 70 msec." [notes:
/// dgtbrd.h]. Its reply is awaited this much longer than [`REPLY_GAP`]: with the 16 ms an FTDI
/// adapter may hold received bytes, it comes after 80 ms, and a second SET_START_GAME then
/// would reach a board still busy with the first (or mark the start again).
pub const START_GAME_TIME: Duration = Duration::from_millis(70);

/// The longest pause before `cmd`'s reply before it counts as missing.
pub fn reply_gap(cmd: BusCommand) -> Duration {
    match cmd {
        BusCommand::SetStartGame => START_GAME_TIME + REPLY_GAP,
        _ => REPLY_GAP,
    }
}

/// The pause after bytes of a reply that ends it (cut short, or bad): a board sends a reply's
/// bytes back to back, so the line is free once it has been quiet this long. Above the 16 ms
/// an FTDI USB-serial adapter may hold received bytes by default (its latency timer, FTDI
/// AN232B-04), so that a reply still coming in is not taken for ended.
pub const REPLY_QUIET: Duration = Duration::from_millis(30);
/// How long every board may take to answer a PING to address 0: 1.1 s (DGT's header), a reply's
/// bytes and [`REPLY_GAP`].
pub const DISCOVERY_WINDOW: Duration = Duration::from_millis(1100 + 7 + 80);
/// How often the chain is searched for boards plugged in later.
pub const REDISCOVER_EVERY: Duration = Duration::from_secs(30);
/// Sends of one command before the exchange counts as unanswered.
pub const MAX_TRIES: u32 = 3;
/// Unanswered exchanges in a row after which a board counts as gone.
pub const LOST_AFTER: u32 = 3;
/// Field changes settled this long on a board the game does not explain: a board dump.
pub const SETTLE_DUMP: Duration = Duration::from_millis(400);
/// Discovery rounds at most in one search (collisions can keep a round inconclusive).
const MAX_ROUNDS: u32 = 8;
/// Turns in which a board's memory (SEND_FROM_START) is asked for, for one recovery, before it
/// is given up (a long memory on a line that loses bytes may never come through whole).
pub const MEMORY_TURNS: u32 = 8;
/// Memory reads a board gets while the core reports moves missing on it (ahead of the record
/// by moves no single sequence explains), at most one every [`RECALL_EVERY`].
pub const MEMORY_RECALLS: u32 = 3;
/// Sends of `cmd` in one board's turn before the turn goes on without its reply (asked again
/// in the board's next turn, when it matters): [`MAX_TRIES`], but one for the clock (read
/// every turn anyway), a board dump or a memory (their long replies take the line longest and
/// come through whole least often on a line that loses bytes: a dump's 70 bytes at 3% loss,
/// one try in eight), so that one board's bad replies do not hold up the others' turns.
pub fn tries_in_a_turn(cmd: BusCommand) -> u32 {
    match cmd {
        // The clock is read again next turn anyway.
        BusCommand::SendBoard | BusCommand::SendFromStart | BusCommand::SendClock => 1,
        _ => MAX_TRIES,
    }
}

/// A board whose clock reading said "no clock" is asked for its clock once in this many turns.
pub const CLOCKLESS_EVERY: u32 = 8;

/// Time between two memory reads for moves missing on one board.
pub const RECALL_EVERY: Duration = Duration::from_secs(5);

/// A chain of DGT boards on one port, in bus mode. Configured (`dgt-bus:/dev/ttyUSB0`), never
/// discovered: a chain's port carries the same USB ids as a single DGT board.
#[derive(Debug, Clone, Copy, Default)]
pub struct DgtBus;

impl BoardDriver for DgtBus {
    fn name(&self) -> &'static str {
        NAME
    }

    fn polled(&self) -> bool {
        true
    }

    fn transport(&self) -> Transport {
        Transport::Serial {
            line: super::super::driver::LINE,
            usb_ids: &[],
        }
    }

    /// The decoder of a board at address 0 (no board has it): use [`BoardDriver::unit_decoder`].
    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(BusStream::new(0))
    }

    fn unit_decoder(&self, unit: Unit) -> Box<dyn Decoder> {
        Box::new(BusStream::new(unit))
    }

    fn line_decoder(&self) -> Box<dyn Decoder> {
        Box::new(BusLineStream::new())
    }

    fn session(&self, cfg: &SessionConfig) -> Option<Box<dyn Session>> {
        Some(Box::new(Chain::new(cfg.clone())))
    }

    /// Not used: the chain's session sends bus commands only.
    fn handshake(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn start(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn keepalive(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn dump_request(&self) -> Vec<u8> {
        Vec::new()
    }
}

/// One board of the chain.
#[derive(Debug)]
struct Member {
    /// Its capture is open (after [`Action::Found`]).
    opened: bool,
    /// Commands of this board's turn still to send.
    turn: VecDeque<BusCommand>,
    /// Commands to send at its next turn, before the cycle's.
    extra: VecDeque<BusCommand>,
    /// Exchanges left unanswered in a row.
    missed: u32,
    /// The fields as the board reported them.
    shadow: Option<Box<FieldArray>>,
    /// Last field change, and whether the settle check was done since.
    last_field: Option<Instant>,
    settled_checked: bool,
    /// Ignored at the current discovery round's PING.
    ignoring: bool,
    /// A game started on the board: its memory is to mark the start (SET_START_GAME), if the
    /// record is still at the start when the command's turn comes (and the board's last dump,
    /// if any came, showed it).
    start_pending: bool,
    /// The board sent a packet of changes that did not come through whole: its next turn asks
    /// for it again (REPEAT_CHANGES), never for new changes, so that none is lost.
    repeat_pending: bool,
    /// The last packet of changes in came with REPEAT_CHANGES: it is an earlier SEND_CHANGES'
    /// packet, and changes made since may wait in the board (a dump now would be ahead of
    /// them).
    stale: bool,
    /// A SEND_CHANGES was put first in this turn after a packet that came with REPEAT_CHANGES.
    refreshed: bool,
    /// Turns left in which its memory is asked for (the current recovery).
    memory_turns: u32,
    /// Memory reads left for moves missing, and when the last was asked.
    recalls: u32,
    last_recall: Option<Instant>,
    /// The board's last clock reading said "no clock", and its turns since the clock was
    /// last asked for.
    clock_absent: bool,
    turns_without_clock: u32,
}

impl Member {
    fn new() -> Member {
        Member {
            opened: false,
            turn: VecDeque::new(),
            extra: VecDeque::new(),
            missed: 0,
            shadow: None,
            last_field: None,
            settled_checked: true,
            ignoring: false,
            start_pending: false,
            repeat_pending: false,
            stale: false,
            refreshed: false,
            memory_turns: 0,
            recalls: MEMORY_RECALLS,
            last_recall: None,
            clock_absent: false,
            turns_without_clock: 0,
        }
    }

    /// The commands of the board's next turn: the one-off requests (version, memory), its
    /// changes (the last packet again when it did not come through), a board dump right after
    /// them when one is wanted (a dump is a snapshot: it agrees with the changes only when none
    /// is pending), the start mark, the clock.
    fn begin_turn(&mut self) {
        self.refreshed = false;
        let wants_board = self.extra.contains(&BusCommand::SendBoard);
        let memory_turns = &mut self.memory_turns;
        self.turn.extend(self.extra.drain(..).filter(|c| match c {
            BusCommand::SendBoard
            | BusCommand::SendChanges
            | BusCommand::RepeatChanges
            | BusCommand::SetStartGame => false,
            BusCommand::SendFromStart if *memory_turns == 0 => false,
            BusCommand::SendFromStart => {
                *memory_turns -= 1;
                true
            }
            _ => true,
        }));
        self.turn.push_back(if self.repeat_pending {
            BusCommand::RepeatChanges
        } else {
            BusCommand::SendChanges
        });
        if wants_board {
            self.turn.push_back(BusCommand::SendBoard);
        }
        if self.start_pending {
            self.turn.push_back(BusCommand::SetStartGame);
        }
        // A board without a clock on its cable is asked every [`CLOCKLESS_EVERY`] turns only
        // (a clock plugged in later is found then): its "no clock" replies would take the line
        // every cycle for nothing.
        self.turns_without_clock += 1;
        if !self.clock_absent || self.turns_without_clock >= CLOCKLESS_EVERY {
            self.turns_without_clock = 0;
            self.turn.push_back(BusCommand::SendClock);
        }
    }

    fn ask(&mut self, cmd: BusCommand) {
        if !self.extra.contains(&cmd) {
            self.extra.push_back(cmd);
        }
    }

    /// Asks for the board's memory in its next [`MEMORY_TURNS`] turns until it comes, each time
    /// with a board dump after the changes (the core recovers from the memory at the dump that
    /// follows it).
    fn ask_memory(&mut self) {
        self.memory_turns = MEMORY_TURNS;
        self.ask(BusCommand::SendFromStart);
        self.ask(BusCommand::SendBoard);
    }

    /// What the board reported, for the repair checks.
    fn observed(&mut self, now: Instant, msg: &Message) {
        match msg {
            Message::Observation(Observation::Field { index, reading }) => {
                if let Some(s) = &mut self.shadow {
                    s[usize::from(*index & 0x3F)] = *reading;
                }
                self.last_field = Some(now);
                self.settled_checked = false;
            }
            Message::Observation(Observation::BoardDump(f)) => {
                self.shadow = Some(f.clone());
                self.settled_checked = true;
            }
            Message::Observation(Observation::ClockAbsent) => self.clock_absent = true,
            Message::Observation(Observation::Clock(_)) => self.clock_absent = false,
            _ => {}
        }
    }
}

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
        if let Some(search) = self.search {
            // Boards found keep quiet at the next PING to 0.
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
            return;
        }
        // Polling: the current board's turn, then the next board's.
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
                if (m.repeat_pending || m.stale) && cmd == BusCommand::SendBoard {
                    // The board's changes did not come through in this turn, or only an
                    // earlier packet of them did (REPEAT_CHANGES): a dump would be ahead of
                    // them (a gap the game cannot explain). It waits for a turn whose changes
                    // came.
                    m.ask(cmd);
                    continue;
                }
                if cmd == BusCommand::SetStartGame {
                    m.start_pending = false;
                    // The mark logs the pieces where they stand: only while the record is at
                    // the game's start and the board showed it last. It does not wait for a
                    // packet of changes still pending: on a bad line a long packet (the 71
                    // bytes of a board's power-up) can take tens of seconds to come through
                    // whole, the game is under way by then, and a game never marked has no
                    // memory to recover from (SEND_FROM_START reads from the last mark). A
                    // move the pending packet hides, marked as the start, is no start
                    // position: the memory then recovers nothing, as an unmarked one.
                    // Before the board's first dump came through (its shadow unknown), the
                    // record's start, seen from its changes, is all there is to go by.
                    let at_start = boards.at_game_start(address)
                        && m.shadow
                            .as_ref()
                            .is_none_or(|f| boards.explains(address, f));
                    if !at_start {
                        continue;
                    }
                }
                self.send(now, address, cmd, 1, false, out);
                return;
            }
            // This board's turn is over: the next board's begins.
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
            if next.is_none() {
                self.line = Line::Idle;
                return;
            }
        }
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
            Line::Listening { until } => {
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
                    if let std::collections::btree_map::Entry::Vacant(e) =
                        self.members.entry(r.address)
                    {
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
            Line::Asking {
                address,
                cmd,
                tries,
                heard,
                ..
            } => {
                if from != Some(address) {
                    return;
                }
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
                    if let Some(m) = self.members.get_mut(&address) {
                        m.missed = 0;
                        match cmd {
                            BusCommand::SendChanges => {
                                m.repeat_pending = false;
                                m.stale = false;
                            }
                            BusCommand::RepeatChanges => {
                                m.repeat_pending = false;
                                m.stale = true;
                                // An earlier packet: the changes made since are asked for at
                                // once (once a turn), before this turn's dump.
                                if !m.refreshed {
                                    m.refreshed = true;
                                    m.turn.push_front(BusCommand::SendChanges);
                                }
                            }
                            BusCommand::SendFromStart => m.memory_turns = 0,
                            _ => {}
                        }
                    }
                    self.line = Line::Idle;
                    self.next(now, boards, out);
                } else {
                    // Bytes of the reply are coming in, or a bad or cut-short reply is still on
                    // the line: the next command (the same again, or the next one) waits until
                    // the line has been quiet for a moment, so that no two replies overlap.
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
            Line::Idle => {}
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
mod tests {
    use super::*;
    use crate::driver::dgt::bus::BusReply;
    use crate::driver::port::LinkKind;

    struct View {
        in_progress: bool,
    }

    /// A view whose boards are all ahead of their record by moves no sequence explains.
    struct Missing;

    impl Boards for Missing {
        fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
            false
        }
        fn game_in_progress(&self, _unit: Unit) -> bool {
            true
        }
        fn at_game_start(&self, _unit: Unit) -> bool {
            false
        }
        fn away_for(&self, _unit: Unit) -> Option<Duration> {
            None
        }
        fn moves_missing(&self, _unit: Unit) -> bool {
            true
        }
    }

    impl Boards for View {
        fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
            true
        }
        fn game_in_progress(&self, _unit: Unit) -> bool {
            self.in_progress
        }
        fn at_game_start(&self, _unit: Unit) -> bool {
            false
        }
        fn away_for(&self, _unit: Unit) -> Option<Duration> {
            None
        }
    }

    fn chain() -> Chain {
        Chain::new(SessionConfig {
            link: LinkKind::Wired,
            keepalive: Duration::from_secs(5),
            quiet_dump: Duration::from_secs(20),
            probing: false,
            port_serial: "port-ttyUSB0".into(),
            memory_after: Duration::from_secs(10),
        })
    }

    /// The commands in `out`, as (address, command byte).
    fn commands(out: &[Action]) -> Vec<(u16, u8)> {
        out.iter()
            .filter_map(|a| match a {
                Action::Send { bytes, .. } => {
                    assert_eq!(bytes.len(), 4, "bus commands only: {bytes:02x?}");
                    assert!(
                        bytes[0] & 0x80 != 0,
                        "no single-board command: {bytes:02x?}"
                    );
                    Some((u16::from(bytes[1]) << 7 | u16::from(bytes[2]), bytes[0]))
                }
                _ => None,
            })
            .collect()
    }

    /// `reply` decoded as the port task would: by the board's decoder while the session listens
    /// to it, by the line's otherwise.
    fn deliver(s: &mut Chain, t: Instant, reply: &BusReply, view: &View, out: &mut Vec<Action>) {
        let from = s.listener();
        let mut dec: Box<dyn Decoder> = match from {
            Some(u) => Box::new(BusStream::new(u)),
            None => Box::new(BusLineStream::new()),
        };
        let mut msgs = Vec::new();
        dec.decode(&reply.encode(), &mut msgs);
        s.received(t, from, &msgs, dec.bad_frames(), view, out);
    }

    #[test]
    fn finds_the_boards_in_rounds_then_polls_them_one_after_the_other() {
        let t0 = Instant::now();
        let view = View { in_progress: false };
        let mut s = chain();
        let mut out = Vec::new();
        s.open(t0, &mut out);
        assert_eq!(commands(&out), [(0, 0x87)], "PING to every board");
        out.clear();
        let mut t = t0 + Duration::from_millis(300);
        deliver(
            &mut s,
            t,
            &BusReply::Ping { address: 1025 },
            &view,
            &mut out,
        );
        t += Duration::from_millis(400);
        deliver(&mut s, t, &BusReply::Ping { address: 7 }, &view, &mut out);
        let found: Vec<u16> = out
            .iter()
            .filter_map(|a| match a {
                Action::Found { unit, serial, .. } => {
                    assert_eq!(*serial, format!("{unit:05}"));
                    Some(*unit)
                }
                _ => None,
            })
            .collect();
        assert_eq!(found, [1025, 7]);
        for u in found {
            s.opened(t, u, &view, &mut out);
        }
        assert!(
            commands(&out).is_empty(),
            "nothing while the boards may answer"
        );
        out.clear();
        // The window closes: a new board was found, so another round: IGNORE to each, PING.
        t = t0 + DISCOVERY_WINDOW + Duration::from_millis(10);
        s.poll(t, &view, &mut out);
        assert_eq!(commands(&out), [(7, 0x8A)]);
        out.clear();
        deliver(&mut s, t, &BusReply::Ping { address: 7 }, &view, &mut out);
        assert_eq!(commands(&out), [(1025, 0x8A)]);
        out.clear();
        deliver(
            &mut s,
            t,
            &BusReply::Ping { address: 1025 },
            &view,
            &mut out,
        );
        assert_eq!(commands(&out), [(0, 0x87)]);
        out.clear();
        // Nobody new: the search ends; polling starts with each board's first commands.
        t += DISCOVERY_WINDOW + Duration::from_millis(10);
        s.poll(t, &view, &mut out);
        assert_eq!(commands(&out), [(7, 0x8B)], "version first");
        out.clear();
        let version = BusReply::Version {
            address: 7,
            version: Some(crate::driver::dgt::bus::FirmwareVersion { major: 1, minor: 2 }),
        };
        deliver(&mut s, t, &version, &view, &mut out);
        assert_eq!(commands(&out), [(7, 0x83)], "changes, then the board");
        out.clear();
        let update = BusReply::Update {
            address: 7,
            entries: Vec::new(),
        };
        deliver(&mut s, t, &update, &view, &mut out);
        assert_eq!(commands(&out), [(7, 0x82)]);
        out.clear();
        let dump = BusReply::BoardDump {
            address: 7,
            fields: Box::new([crate::core::observation::SquareReading::Empty; 64]),
        };
        deliver(&mut s, t, &dump, &view, &mut out);
        assert_eq!(commands(&out), [(7, 0x81)], "the turn ends with the clock");
        out.clear();
        let clock = BusReply::Clock {
            address: 7,
            clock: crate::driver::dgt::BwTime::NoClock,
        };
        deliver(&mut s, t, &clock, &view, &mut out);
        assert_eq!(commands(&out), [(1025, 0x8B)], "the next board's turn");
    }

    #[test]
    fn a_bad_reply_to_changes_is_repeated_and_a_silent_board_is_lost() {
        let t0 = Instant::now();
        let view = View { in_progress: true };
        let mut s = chain();
        let mut out = Vec::new();
        s.open(t0, &mut out);
        deliver(&mut s, t0, &BusReply::Ping { address: 3 }, &view, &mut out);
        s.opened(t0, 3, &view, &mut out);
        assert!(out.contains(&Action::Note {
            unit: 3,
            note: Note::MemoryAsked
        }));
        // Two quiet rounds end the search (the first round found a board: a second one runs).
        let mut t = t0;
        for _ in 0..4 {
            t += DISCOVERY_WINDOW + Duration::from_millis(1);
            out.clear();
            s.poll(t, &view, &mut out);
            if commands(&out) == [(3, 0x8A)] {
                deliver(&mut s, t, &BusReply::Ping { address: 3 }, &view, &mut out);
            }
            if commands(&out).contains(&(3, 0x8B)) {
                break;
            }
        }
        assert_eq!(commands(&out).last(), Some(&(3, 0x8B)));
        out.clear();
        let version = BusReply::Version {
            address: 3,
            version: None,
        };
        deliver(&mut s, t, &version, &view, &mut out);
        assert_eq!(
            commands(&out),
            [(3, 0x86)],
            "the memory since the game's start"
        );
        out.clear();
        // A FROM_START with a bad checksum: once the line is quiet, the turn goes on (a memory
        // gets one try a turn: it is asked again in the board's next turn).
        let mut bad = BusReply::FromStart {
            address: 3,
            entries: Vec::new(),
        }
        .encode();
        let last = bad.len() - 1;
        bad[last] ^= 0x01;
        let mut dec = BusStream::new(3);
        let mut msgs = Vec::new();
        dec.decode(&bad, &mut msgs);
        s.received(t, Some(3), &msgs, dec.bad_frames(), &view, &mut out);
        assert!(
            commands(&out).is_empty(),
            "nothing while the line may be busy"
        );
        s.poll(t + REPLY_QUIET - Duration::from_millis(1), &view, &mut out);
        assert!(
            commands(&out).is_empty(),
            "nothing while the line may be busy"
        );
        t += REPLY_QUIET;
        s.poll(t, &view, &mut out);
        assert_eq!(commands(&out), [(3, 0x83)]);
        assert!(s.members[&3].extra.contains(&BusCommand::SendFromStart));
        out.clear();
        // Then no answer at all, three times in a row for three exchanges: lost.
        let mut lost = false;
        for _ in 0..(MAX_TRIES * LOST_AFTER + 2) {
            t += Duration::from_millis(200);
            s.poll(t, &view, &mut out);
            lost |= out
                .iter()
                .any(|a| matches!(a, Action::Lost { unit: 3, .. }));
        }
        assert!(lost, "{out:?}");
        assert_eq!(s.stats.lost, 1);
    }

    #[test]
    fn a_game_start_marks_the_boards_memory() {
        let t0 = Instant::now();
        let view = View { in_progress: false };
        let mut s = chain();
        let mut out = Vec::new();
        s.open(t0, &mut out);
        deliver(&mut s, t0, &BusReply::Ping { address: 9 }, &view, &mut out);
        s.opened(t0, 9, &view, &mut out);
        let started = CoreEvent {
            t: 0,
            game: 1,
            kind: EventKind::GameStarted {
                fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
                chess960: None,
            },
        };
        s.events(t0, 9, std::slice::from_ref(&started), &mut out);
        assert!(s.members[&9].start_pending);
        // A game that starts during the board's turn is marked in that turn, before its clock
        // (the first move may come before the next turn); once only.
        s.current = Some(9);
        let m = s.members.get_mut(&9).unwrap();
        m.start_pending = false;
        m.turn = VecDeque::from([BusCommand::SendBoard, BusCommand::SendClock]);
        s.events(t0, 9, std::slice::from_ref(&started), &mut out);
        s.events(t0, 9, std::slice::from_ref(&started), &mut out);
        assert_eq!(
            Vec::from(s.members[&9].turn.clone()),
            [
                BusCommand::SendBoard,
                BusCommand::SetStartGame,
                BusCommand::SendClock
            ]
        );
        // A turn that does not read the clock (a board without one) marks it last (issue 38:
        // the next turn came after the first move, and the game went unmarked).
        let m = s.members.get_mut(&9).unwrap();
        m.start_pending = false;
        m.turn = VecDeque::from([BusCommand::SendBoard]);
        s.events(t0, 9, &[started], &mut out);
        assert_eq!(
            Vec::from(s.members[&9].turn.clone()),
            [BusCommand::SendBoard, BusCommand::SetStartGame]
        );
    }

    /// A view whose boards' games have just started: no move recorded, the board as recorded.
    struct AtStart;

    impl Boards for AtStart {
        fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
            true
        }
        fn game_in_progress(&self, _unit: Unit) -> bool {
            false
        }
        fn at_game_start(&self, _unit: Unit) -> bool {
            true
        }
        fn away_for(&self, _unit: Unit) -> Option<Duration> {
            None
        }
    }

    #[test]
    fn a_game_start_is_marked_while_a_packet_of_changes_is_still_asked_for() {
        // Issue 38: a board's long power-up packet did not come through for 32 s on a line
        // losing 3% of its bytes, nor its first dump; its game began meanwhile and was never
        // marked, so its memory was empty when its moves were wanted.
        let mut s = polling(&[5]);
        let m = s.members.get_mut(&5).unwrap();
        m.repeat_pending = true;
        m.start_pending = true;
        // No dump came through yet (the shadow is unknown): the record's start is enough.
        m.ask(BusCommand::SendBoard);
        let mut t = Instant::now();
        let mut out = Vec::new();
        let mut sent = Vec::new();
        for _ in 0..50 {
            s.poll(t, &AtStart, &mut out);
            sent.extend(commands(&out));
            out.clear();
            if sent.contains(&(5, 0x85)) {
                break;
            }
            t += Duration::from_millis(50);
        }
        assert_eq!(sent[0], (5, 0x84), "the packet is asked for again first");
        assert!(
            sent.contains(&(5, 0x85)),
            "the start is marked: {sent:02x?}"
        );
        assert!(!sent.contains(&(5, 0x82)), "no dump ahead of the changes");
        assert!(
            s.members[&5].repeat_pending,
            "the packet is still asked for"
        );
        assert!(!s.members[&5].start_pending, "once");
    }

    /// A session with the boards at `addrs` found and open, no search under way: its next
    /// poll starts polling them.
    fn polling(addrs: &[u16]) -> Chain {
        let mut s = chain();
        for &a in addrs {
            let mut m = Member::new();
            m.opened = true;
            s.members.insert(a, m);
        }
        s
    }

    /// An UPDATE of board `address` with one field change, its last byte dropped.
    fn cut_update(address: u16) -> Vec<u8> {
        let mut bytes = BusReply::Update {
            address,
            entries: vec![crate::driver::dgt::ee::EeEntry::Field {
                index: 12,
                reading: crate::core::observation::SquareReading::Empty,
                quick: false,
            }],
        }
        .encode();
        bytes.pop();
        bytes
    }

    /// Feeds `bytes` to the decoder of the board the session listens to.
    fn feed(s: &mut Chain, t: Instant, dec: &mut BusStream, bytes: &[u8], out: &mut Vec<Action>) {
        let view = View { in_progress: false };
        let mut msgs = Vec::new();
        let before = dec.bad_frames();
        dec.decode(bytes, &mut msgs);
        let from = s.listener();
        s.received(t, from, &msgs, dec.bad_frames() - before, &view, out);
    }

    #[test]
    fn spoilt_changes_are_waited_out_repeated_in_later_turns_and_never_lost() {
        let view = View { in_progress: false };
        let mut s = polling(&[5, 6]);
        let mut t = Instant::now();
        let mut out = Vec::new();
        s.poll(t, &view, &mut out);
        assert_eq!(commands(&out), [(5, 0x83)]);
        let mut dec = BusStream::new(5);
        // Three replies cut short: each waited out until the line is quiet, then asked again
        // with REPEAT_CHANGES; nothing goes out while the reply may still be coming.
        for _ in 0..MAX_TRIES {
            out.clear();
            t += Duration::from_millis(10);
            feed(&mut s, t, &mut dec, &cut_update(5), &mut out);
            assert!(commands(&out).is_empty(), "{out:?}");
            s.poll(t + REPLY_QUIET - Duration::from_millis(1), &view, &mut out);
            assert!(commands(&out).is_empty(), "{out:?}");
            t += REPLY_QUIET;
            s.poll(t, &view, &mut out);
            if commands(&out) != [(5, 0x84)] {
                break;
            }
        }
        // The board answered (garbled): it is not lost; the other board gets its turn.
        assert_eq!(
            commands(&out),
            [(5, 0x81)],
            "the turn goes on with the clock"
        );
        assert!(!out.iter().any(|a| matches!(a, Action::Note { .. })));
        out.clear();
        deliver(
            &mut s,
            t,
            &BusReply::Clock {
                address: 5,
                clock: crate::driver::dgt::BwTime::NoClock,
            },
            &view,
            &mut out,
        );
        assert_eq!(commands(&out), [(6, 0x83)], "the next board's turn");
        out.clear();
        deliver(
            &mut s,
            t,
            &BusReply::Update {
                address: 6,
                entries: Vec::new(),
            },
            &view,
            &mut out,
        );
        out.clear();
        deliver(
            &mut s,
            t,
            &BusReply::Clock {
                address: 6,
                clock: crate::driver::dgt::BwTime::NoClock,
            },
            &view,
            &mut out,
        );
        // Board 5's next turn asks for the same packet again, never for new changes.
        assert_eq!(commands(&out), [(5, 0x84)]);
        out.clear();
        let update = BusReply::Update {
            address: 5,
            entries: Vec::new(),
        };
        deliver(&mut s, t, &update, &view, &mut out);
        // That packet was the earlier one: the changes made since are asked for at once.
        assert_eq!(commands(&out), [(5, 0x83)]);
        out.clear();
        deliver(&mut s, t, &update, &view, &mut out);
        // Board 5 said "no clock": its clock waits for a later turn; board 6's turn comes.
        assert_eq!(commands(&out), [(6, 0x83)]);
        assert!(!s.members[&5].repeat_pending);
        assert_eq!(s.stats.lost, 0);
    }

    #[test]
    fn a_packet_that_came_with_repeat_changes_is_followed_by_new_changes_before_a_dump() {
        let view = View { in_progress: false };
        let mut s = polling(&[5]);
        s.members.get_mut(&5).unwrap().ask(BusCommand::SendBoard);
        let t = Instant::now();
        let mut out = Vec::new();
        s.poll(t, &view, &mut out);
        assert_eq!(commands(&out), [(5, 0x83)]);
        // The reply to SEND_CHANGES is lost: REPEAT_CHANGES, whose packet comes through.
        out.clear();
        s.poll(t + Duration::from_millis(100), &view, &mut out);
        assert_eq!(commands(&out), [(5, 0x84)]);
        out.clear();
        let update = BusReply::Update {
            address: 5,
            entries: Vec::new(),
        };
        deliver(&mut s, t, &update, &view, &mut out);
        // That packet is the board's earlier one: the changes since come first, then the dump.
        assert_eq!(commands(&out), [(5, 0x83)], "new changes before the dump");
        out.clear();
        deliver(&mut s, t, &update, &view, &mut out);
        assert_eq!(commands(&out), [(5, 0x82)]);
    }

    #[test]
    fn moves_missing_read_the_boards_memory_a_few_times_apart() {
        let mut s = polling(&[5]);
        let t0 = Instant::now();
        let mut out = Vec::new();
        let mut asked = Vec::new();
        let mut reads = 0;
        // The board answers every command at once; moves stay missing for a minute.
        for k in 0..600u32 {
            let t = t0 + Duration::from_millis(100) * k;
            out.clear();
            s.poll(t, &Missing, &mut out);
            for _ in 0..10 {
                let Line::Asking { address, cmd, .. } = s.line else {
                    break;
                };
                if out.iter().any(|a| {
                    matches!(
                        a,
                        Action::Note {
                            note: Note::MemoryAskedAgain,
                            ..
                        }
                    )
                }) {
                    asked.push(t);
                }
                reads += u32::from(cmd == BusCommand::SendFromStart);
                let reply = match cmd {
                    BusCommand::SendFromStart => BusReply::FromStart {
                        address,
                        entries: Vec::new(),
                    },
                    BusCommand::SendChanges | BusCommand::RepeatChanges => BusReply::Update {
                        address,
                        entries: Vec::new(),
                    },
                    BusCommand::SendBoard => BusReply::BoardDump {
                        address,
                        fields: Box::new([crate::core::observation::SquareReading::Empty; 64]),
                    },
                    BusCommand::SendClock => BusReply::Clock {
                        address,
                        clock: crate::driver::dgt::BwTime::NoClock,
                    },
                    c => panic!("{c:?}"),
                };
                out.clear();
                let mut dec = BusStream::new(address);
                let mut msgs = Vec::new();
                dec.decode(&reply.encode(), &mut msgs);
                s.received(t, Some(address), &msgs, 0, &Missing, &mut out);
            }
        }
        assert_eq!(asked.len(), MEMORY_RECALLS as usize, "{asked:?}");
        assert!(asked.windows(2).all(|w| w[1] - w[0] >= RECALL_EVERY));
        // Each read went out (and was answered).
        assert_eq!(reads, MEMORY_RECALLS);
    }

    #[test]
    fn a_start_mark_whose_answer_came_in_bad_is_not_written_again() {
        let view = View { in_progress: false };
        let mut s = polling(&[5]);
        let t = Instant::now();
        let mut out = Vec::new();
        s.send(t, 5, BusCommand::SetStartGame, 1, false, &mut out);
        let mut bad = BusReply::StartGameWritten { address: 5 }.encode();
        let last = bad.len() - 1;
        bad[last] ^= 0x01;
        out.clear();
        let mut dec = BusStream::new(5);
        feed(&mut s, t, &mut dec, &bad, &mut out);
        s.poll(t + REPLY_QUIET, &view, &mut out);
        assert!(
            !commands(&out).contains(&(5, 0x85)),
            "a second mark: {out:?}"
        );
    }

    #[test]
    fn a_board_without_a_clock_is_asked_for_it_once_in_a_while() {
        let view = View { in_progress: false };
        let mut s = polling(&[5]);
        let t = Instant::now();
        let mut out = Vec::new();
        s.poll(t, &view, &mut out);
        let mut clock_asks = Vec::new();
        for turn in 0..(2 * CLOCKLESS_EVERY + 1) {
            loop {
                let Line::Asking { address, cmd, .. } = s.line else {
                    panic!("{:?}", s.line);
                };
                let reply = match cmd {
                    BusCommand::SendChanges => BusReply::Update {
                        address,
                        entries: Vec::new(),
                    },
                    BusCommand::SendClock => BusReply::Clock {
                        address,
                        clock: crate::driver::dgt::BwTime::NoClock,
                    },
                    c => panic!("{c:?}"),
                };
                out.clear();
                deliver(&mut s, t, &reply, &view, &mut out);
                if cmd == BusCommand::SendClock {
                    clock_asks.push(turn);
                }
                // The next turn begins with its changes.
                if commands(&out) == [(5, 0x83)] {
                    break;
                }
            }
        }
        assert_eq!(clock_asks, [0, CLOCKLESS_EVERY, 2 * CLOCKLESS_EVERY]);
    }
}
