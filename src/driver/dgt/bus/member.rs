//! [`Member`]: what a chain's session keeps of one board of the chain (its turn's commands,
//! the requests for its next turn, the exchanges it left unanswered, the fields it reported,
//! the recoveries under way) and how it lays out the board's next turn.

use std::collections::VecDeque;
use std::time::Instant;

use super::BusCommand;
use super::chain::{CLOCKLESS_EVERY, MEMORY_RECALLS, MEMORY_TURNS};
use crate::core::observation::{FieldArray, Observation};
use crate::driver::Message;

/// One board of the chain.
#[derive(Debug)]
pub(super) struct Member {
    /// Its capture is open (after [`Action::Found`](crate::driver::port::Action::Found)).
    pub(super) opened: bool,
    /// Commands of this board's turn still to send.
    pub(super) turn: VecDeque<BusCommand>,
    /// Commands to send at its next turn, before the cycle's.
    pub(super) extra: VecDeque<BusCommand>,
    /// Exchanges left unanswered in a row.
    pub(super) missed: u32,
    /// The fields as the board reported them.
    pub(super) shadow: Option<Box<FieldArray>>,
    /// Last field change, and whether the settle check was done since.
    pub(super) last_field: Option<Instant>,
    pub(super) settled_checked: bool,
    /// Ignored at the current discovery round's PING.
    pub(super) ignoring: bool,
    /// A game started on the board: its memory is to mark the start (SET_START_GAME), if the
    /// record is still at the start when the command's turn comes (and the board's last dump,
    /// if any came, showed it).
    pub(super) start_pending: bool,
    /// The board sent a packet of changes that did not come through whole: its next turn asks
    /// for it again (REPEAT_CHANGES), never for new changes, so that none is lost.
    pub(super) repeat_pending: bool,
    /// The last packet of changes in came with REPEAT_CHANGES: it is an earlier SEND_CHANGES'
    /// packet, and changes made since may wait in the board (a dump now would be ahead of
    /// them).
    pub(super) stale: bool,
    /// A SEND_CHANGES was put first in this turn after a packet that came with REPEAT_CHANGES.
    pub(super) refreshed: bool,
    /// Turns left in which its memory is asked for (the current recovery).
    pub(super) memory_turns: u32,
    /// Memory reads left for moves missing, and when the last was asked.
    pub(super) recalls: u32,
    pub(super) last_recall: Option<Instant>,
    /// The board's last clock reading said "no clock", and its turns since the clock was
    /// last asked for.
    clock_absent: bool,
    turns_without_clock: u32,
}

impl Member {
    pub(super) fn new() -> Member {
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
    pub(super) fn begin_turn(&mut self) {
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

    pub(super) fn ask(&mut self, cmd: BusCommand) {
        if !self.extra.contains(&cmd) {
            self.extra.push_back(cmd);
        }
    }

    /// Asks for the board's memory in its next [`MEMORY_TURNS`] turns until it comes, each time
    /// with a board dump after the changes (the core recovers from the memory at the dump that
    /// follows it).
    pub(super) fn ask_memory(&mut self) {
        self.memory_turns = MEMORY_TURNS;
        self.ask(BusCommand::SendFromStart);
        self.ask(BusCommand::SendBoard);
    }

    /// What the board reported, for the repair checks.
    pub(super) fn observed(&mut self, now: Instant, msg: &Message) {
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
