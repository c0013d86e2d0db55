//! [`ChainEmulator`]: the chain as one [`EmulatedBoard`] for the runner: its boards, its line
//! and adapter, its two clocks (the runner's script time, link time), what it tells of them.

use super::board::board_time;
use super::{
    Board, BusBoardConfig, BusBoardStats, ChainConfig, ChainEmulator, ChainError, Edge, LineStats,
};
use crate::core::observation::Micros;
use crate::sim::emulator::runner::{BoardStatus, EmulatedBoard};
use crate::sim::emulator::{ClockCommandStats, Emulator, Script, Unknown};
use crate::sim::rng::Rng;

impl ChainEmulator {
    /// A chain of one board per script (board `i` set by `cfg.boards[i]`, or numbered), all
    /// powered up with their script's first position, in bus mode, their players waiting.
    pub fn new(scripts: Vec<Script>, mut cfg: ChainConfig) -> Result<ChainEmulator, ChainError> {
        cfg.byte_time = cfg.byte_time.max(1);
        if scripts.is_empty() {
            return Err(ChainError::Empty);
        }
        let mut boards: Vec<Board> = Vec::with_capacity(scripts.len());
        for (i, script) in scripts.into_iter().enumerate() {
            let bc = cfg
                .boards
                .get(i)
                .cloned()
                .unwrap_or_else(|| BusBoardConfig::numbered(i));
            let address = bc
                .serial
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|a| (1..=0x3FFF).contains(a))
                .ok_or_else(|| ChainError::BadSerial(bc.serial.clone()))?
                as u16;
            if boards.iter().any(|b| b.address == address) {
                return Err(ChainError::DuplicateAddress(address));
            }
            boards.push(Board::new(address, script, &bc));
        }
        let mut chain = ChainEmulator {
            delays: Rng::derive(cfg.seed, 0xB05),
            loss: Rng::derive(cfg.seed, 0x1055),
            noise: Rng::derive(cfg.seed, 0x5EED),
            faults: Rng::derive(cfg.seed, 0xFA17),
            boards,
            now: 0,
            link_now: 0,
            host_free: 0,
            parser: Vec::new(),
            line: Vec::new(),
            unknown: Unknown::default(),
            stats: LineStats::default(),
            adapter: Vec::new(),
            adapter_due: None,
            cfg,
        };
        chain.schedule_noise(0);
        Ok(chain)
    }

    /// The configuration.
    pub fn config(&self) -> &ChainConfig {
        &self.cfg
    }

    /// Number of boards.
    pub fn len(&self) -> usize {
        self.boards.len()
    }

    /// Whether the chain has no board (never: [`ChainEmulator::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.boards.is_empty()
    }

    /// Board `i`'s bus address.
    pub fn address(&self, i: usize) -> Option<u16> {
        self.boards.get(i).map(|b| b.address)
    }

    /// Every board's bus address, in chain order.
    pub fn addresses(&self) -> Vec<u16> {
        self.boards.iter().map(|b| b.address).collect()
    }

    /// Board `i`'s players, pieces and memory (its single-board emulator, never spoken to).
    pub fn players(&self, i: usize) -> Option<&Emulator> {
        self.boards.get(i).map(|b| &b.players)
    }

    /// What board `i` did.
    pub fn stats(&self, i: usize) -> Option<&BusBoardStats> {
        self.boards.get(i).map(|b| &b.stats)
    }

    /// What the line did.
    pub fn line_stats(&self) -> &LineStats {
        &self.stats
    }

    /// The runner script time at which board `i`'s players started (its first SEND_CHANGES).
    pub fn started_at(&self, i: usize) -> Option<Micros> {
        self.boards.get(i).and_then(|b| b.started_at)
    }

    /// Board `i`'s own script time at runner script time `t` (0 until it started).
    pub fn board_time(&self, i: usize, t: Micros) -> Micros {
        self.boards.get(i).map_or(0, |b| board_time(b, t))
    }

    /// Plies started on board `i` at runner script time `t`.
    pub fn plies_started_on(&self, i: usize, t: Micros) -> usize {
        self.boards.get(i).map_or(0, |b| match b.started_at {
            Some(_) => b.players.plies_started(board_time(b, t)),
            None => 0,
        })
    }

    /// Plies settled on board `i` at runner script time `t`.
    pub fn plies_settled_on(&self, i: usize, t: Micros) -> usize {
        self.boards.get(i).map_or(0, |b| match b.started_at {
            Some(_) => b.players.plies_settled(board_time(b, t)),
            None => 0,
        })
    }

    /// Host bytes no board took (see the module documentation).
    pub fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    /// Link time as last told.
    pub fn link_now(&self) -> Micros {
        self.link_now
    }

    /// A board's EEPROM began writing when its memory changed since last seen.
    pub(super) fn observe_eeprom(&mut self) {
        for b in &mut self.boards {
            let w = b.players.memory().writes();
            if w != b.seen_writes {
                b.seen_writes = w;
                b.eeprom_until = self.link_now + self.cfg.eeprom_busy;
            }
        }
    }

    /// Board `i`'s presence on the line changes: what it still had to send is cut when it goes
    /// off.
    fn apply_edge(&mut self, i: usize, e: Edge) {
        if e.off {
            self.cut(i);
        }
        self.boards[i].apply_edge(e);
    }
}

impl EmulatedBoard for ChainEmulator {
    fn next_due(&self) -> Option<Micros> {
        self.boards
            .iter()
            .flat_map(|b| {
                let step = b
                    .started_at
                    .and_then(|s| b.players.next_due().map(|t| t + s));
                let edge = b.edges.get(b.next_edge).map(|e| e.at);
                [step, edge]
            })
            .flatten()
            .min()
    }

    fn next_link_due(&self) -> Option<Micros> {
        self.line
            .iter()
            .filter(|t| t.sent < t.bytes.len())
            .map(|t| t.start + (t.sent as Micros + 1) * self.cfg.byte_time)
            .chain(self.adapter_due)
            .min()
    }

    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.link_now = self.link_now.max(now);
        let now = self.link_now;
        self.observe_eeprom();
        let (bytes, garbled) = self.bytes_over(now);
        self.mark_garbled(garbled);
        self.through_faults(bytes, out);
        self.adapter_hands_over(now, out);
        self.move_on(now);
        self.drop_finished();
    }

    fn host_input(&mut self, bytes: &[u8], _out: &mut Vec<u8>) -> bool {
        self.host_bytes(bytes)
    }

    fn advance(&mut self, now: Micros, _out: &mut Vec<u8>) {
        self.now = self.now.max(now);
        let now = self.now;
        let mut sink = Vec::new();
        for i in 0..self.boards.len() {
            while let Some(e) = self.boards[i]
                .edges
                .get(self.boards[i].next_edge)
                .copied()
                .filter(|e| e.at <= now)
            {
                let b = &mut self.boards[i];
                let t = board_time(b, e.at);
                b.players.advance(t, &mut sink);
                b.next_edge += 1;
                self.apply_edge(i, e);
            }
            let b = &mut self.boards[i];
            let t = board_time(b, now);
            b.players.advance(t, &mut sink);
        }
        self.observe_eeprom();
    }

    fn unplugged(&mut self) {
        for i in 0..self.boards.len() {
            self.cut(i);
            self.boards[i].reporting = false;
        }
        self.parser.clear();
        self.adapter.clear();
        self.adapter_due = None;
    }

    fn host_gone(&mut self) {
        for b in &mut self.boards {
            b.reporting = false;
        }
    }

    fn reset(&mut self) {
        for i in 0..self.boards.len() {
            self.cut(i);
            let b = &mut self.boards[i];
            b.players.reset();
            b.reporting = false;
            b.ignore_next_ping = false;
        }
        self.parser.clear();
    }

    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        self.boards
            .iter()
            .filter_map(|b| {
                let s = b.started_at?;
                Some(s + b.players.after_plies(board_time(b, t), k))
            })
            .fold(t, Micros::max)
    }

    fn plies_started(&self, t: Micros) -> usize {
        (0..self.boards.len())
            .map(|i| self.plies_started_on(i, t))
            .sum()
    }

    fn plies_settled(&self, t: Micros) -> usize {
        (0..self.boards.len())
            .map(|i| self.plies_settled_on(i, t))
            .sum()
    }

    fn finished(&self) -> bool {
        self.boards.iter().all(|b| b.players.finished())
    }

    fn texts(&self) -> &[String] {
        &[]
    }

    fn clock_commands(&self) -> ClockCommandStats {
        ClockCommandStats::default()
    }

    fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }

    fn boards(&self, t: Micros) -> Vec<BoardStatus> {
        (0..self.boards.len())
            .map(|i| {
                let b = &self.boards[i];
                BoardStatus {
                    address: b.address,
                    plies_started: self.plies_started_on(i, t),
                    plies_settled: self.plies_settled_on(i, t),
                    commands: b.stats.commands.values().sum(),
                    commands_lost: b.stats.commands_lost,
                    commands_lost_in_stalls: b.stats.commands_lost_in_stalls,
                    missed: b.stats.missed,
                    replies_sent: b.stats.replies_sent,
                    replies_garbled: b.stats.replies_garbled,
                    collisions: b.stats.collisions,
                    collided_with: b.stats.collided_with.clone(),
                    collisions_in_stalls: b.stats.collisions_in_stalls,
                }
            })
            .collect()
    }
}
