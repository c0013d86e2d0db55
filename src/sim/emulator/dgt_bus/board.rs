//! One emulated board of the chain ([`Board`]): its players, pieces and memory (a single-board
//! emulator never spoken to), its bus address, its times off the line, the state of its bus
//! mode (reporting, IGNORE flag, deaf after a RESET, its EEPROM writing) and what it did
//! ([`BusBoardStats`]).

use std::collections::BTreeMap;

use super::{Board, BusBoardConfig, Edge};
use crate::core::observation::Micros;
use crate::sim::emulator::{Emulator, EmulatorConfig, Script};

/// What one board of the chain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BusBoardStats {
    /// Commands it took, by command byte (addressed to it or to every board).
    pub commands: BTreeMap<u8, u64>,
    /// Commands lost: they came while it was still busy with the previous one.
    pub commands_lost: u64,
    /// Commands that came while its reply was still going out after the emulator itself had fallen
    /// behind in the middle of that reply (a pause of [`STALL_GAP`](super::STALL_GAP) or more
    /// between two of its bytes, which a real board never leaves: the machine running the emulator
    /// was busy): the host saw a quiet line, so they are not counted in `commands_lost`.
    pub commands_lost_in_stalls: u64,
    /// Commands it missed: off the line, or deaf after a RESET.
    pub missed: u64,
    /// PINGs to address 0 it ignored after IGNORE_NEXT_BUS_PING.
    pub pings_ignored: u64,
    /// Replies it sent to the end.
    pub replies_sent: u64,
    /// Of those, replies garbled by another transmission on the line.
    pub replies_garbled: u64,
    /// Of those, replies to a command addressed to this board alone: the host addressed it
    /// while another transmission was on the line, or before its reply could begin.
    pub collisions: u64,
    /// The first collisions (up to 8), described: the reply (its first byte, link time) and
    /// the transmission that overlapped it, so that a test that fails on a collision says
    /// which exchange the host cut short.
    pub collided_with: Vec<String>,
    /// Replies to a command addressed to it that collided with another board's reply which the
    /// emulator itself had held up mid-way ([`STALL_GAP`](super::STALL_GAP); the host saw a quiet
    /// line and went on): not the host's, so not counted in `collisions`.
    pub collisions_in_stalls: u64,
    /// Replies cut short (the board went off the line, or the chain was unplugged).
    pub replies_cut: u64,
}

impl Board {
    /// Board `bc` at bus `address`, powered up with its script's first position, in bus mode,
    /// its players waiting.
    pub(super) fn new(address: u16, script: Script, bc: &BusBoardConfig) -> Board {
        let players = Emulator::new(
            script,
            EmulatorConfig {
                serial: bc.serial.clone(),
                version: bc.version,
                clock: bc.clock,
                increment_mode: bc.increment_mode,
                // Clock times are read when asked for (SEND_CLK): no wake-ups per second.
                clock_ticks: false,
                ..Default::default()
            },
        );
        let mut edges = Vec::new();
        for o in &bc.outages {
            if o.until > o.from {
                edges.push(Edge {
                    at: o.from,
                    off: true,
                    power: o.power_off,
                });
                edges.push(Edge {
                    at: o.until,
                    off: false,
                    power: o.power_off,
                });
            }
        }
        edges.sort_by_key(|e| e.at);
        Board {
            address,
            version: bc.version,
            seen_writes: players.memory().writes(),
            players,
            started_at: None,
            reporting: false,
            ignore_next_ping: false,
            off: 0,
            unpowered: 0,
            edges,
            next_edge: 0,
            deaf_until: 0,
            eeprom_until: 0,
            stats: BusBoardStats::default(),
        }
    }

    /// The board's presence on the line changes (what it still had to send is cut first, by
    /// the chain, when it goes off): outages counted, its power off or back on.
    pub(super) fn apply_edge(&mut self, e: Edge) {
        let count = |n: &mut u32| {
            *n = if e.off {
                n.saturating_add(1)
            } else {
                n.saturating_sub(1)
            }
        };
        count(&mut self.off);
        if e.power {
            count(&mut self.unpowered);
            let on = self.unpowered == 0;
            if on && !e.off {
                // Power back: the power-up sequence; the board's RAM starts afresh.
                self.players.set_powered(true);
                self.ignore_next_ping = false;
                self.reporting = false;
            } else if !on {
                self.players.set_powered(false);
            }
        }
    }
}

/// Board `b`'s own script time at runner script time `t` (0 until it started).
pub(super) fn board_time(b: &Board, t: Micros) -> Micros {
    b.started_at.map_or(0, |s| (t - s).max(0))
}
