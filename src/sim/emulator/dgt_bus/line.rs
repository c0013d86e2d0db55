//! The line every board of the chain shares, and the USB-serial adapter between it and the
//! host: transmissions (replies and noise) go out byte by byte in link time, overlapping ones
//! garble each other, a lossy or noisy line loses, changes and cuts reply bytes, and the
//! adapter holds what it receives until its latency timer expires or a packet is full.

use super::{ADAPTER_PACKET, BusBoardStats, ChainEmulator, Transmission};
use crate::core::observation::Micros;

/// Time of one byte on the line: 10 bits (start, 8 data, stop) at 9600 baud.
pub const BYTE_TIME: Micros = 1_042;
/// A pause this long between two bytes of one reply as the emulator puts them out is the
/// emulator falling behind (its machine busy), never the board: a board sends a reply's bytes
/// back to back (see
/// [`BusBoardStats::commands_lost_in_stalls`](super::BusBoardStats::commands_lost_in_stalls)).
pub const STALL_GAP: Micros = 10_000;

/// A byte whose time on the line is over: its slot's start (link time), the index of its
/// transmission on the line, the byte the host receives.
type LineByte = (Micros, usize, u8);

/// What the line did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Commands with a bad checksum (ignored).
    pub bad_checksums: u64,
    /// Single-board command bytes (no board takes them here).
    pub single_board_bytes: u64,
    /// Commands to an address no board has.
    pub unaddressed: u64,
    /// Reply bytes the lossy line dropped.
    pub bytes_dropped: u64,
    /// Reply bytes the line changed (one bit flipped).
    pub bytes_garbled: u64,
    /// Replies the line cut short.
    pub replies_cut: u64,
    /// Noise bytes put on the line.
    pub noise_bytes: u64,
}

impl ChainEmulator {
    /// The next burst of noise, due about
    /// [`ChainConfig::noise_every`](super::ChainConfig::noise_every) after `after`.
    pub(super) fn schedule_noise(&mut self, after: Micros) {
        let Some(every) = self.cfg.noise_every.filter(|e| *e > 0) else {
            return;
        };
        let at = after + self.noise.range(every / 2, every + every / 2);
        let n = 1 + self.noise.below(8) as usize;
        // Bytes without bit 7 (no frame starts there) and headers that are no reply id.
        let bytes: Vec<u8> = (0..n)
            .map(|_| match self.noise.below(4) {
                0 => [0x80, 0xC0, 0xFF, 0x8F][self.noise.below(4) as usize],
                _ => self.noise.below(0x80) as u8,
            })
            .collect();
        self.line.push(Transmission {
            board: None,
            start: at,
            bytes,
            sent: 0,
            garbled: false,
            addressed: false,
            last_out: None,
            longest_gap: 0,
            garbled_by: None,
            excused: false,
        });
    }

    /// Link time at which transmission `t`'s last byte is off the line.
    fn end_of(&self, t: &Transmission) -> Micros {
        t.start + t.bytes.len() as Micros * self.cfg.byte_time
    }

    /// Whether board `i` has a reply not yet off the line (its one-command buffer is full).
    pub(super) fn busy(&self, i: usize) -> bool {
        self.line
            .iter()
            .any(|t| t.board == Some(i) && t.sent < t.bytes.len())
    }

    /// The adapter receives `byte`, its time on the line over at `at`: it holds it until its
    /// latency timer (running since link time 0) next expires, and hands over a full packet at
    /// once.
    fn adapter_takes(&mut self, at: Micros, byte: u8, out: &mut Vec<u8>) {
        let period = self.cfg.adapter_latency;
        if period <= 0 {
            out.push(byte);
            return;
        }
        // The timer expired before this byte came: what it held went then.
        self.adapter_hands_over(at, out);
        self.adapter.push(byte);
        if self.adapter.len() >= ADAPTER_PACKET {
            self.adapter_hands_over(Micros::MAX, out);
        } else if self.adapter_due.is_none() {
            self.adapter_due = Some((at / period + 1) * period);
        }
    }

    /// The adapter hands the host what it holds when its timer expired by `t`.
    pub(super) fn adapter_hands_over(&mut self, t: Micros, out: &mut Vec<u8>) {
        if self.adapter_due.is_some_and(|due| due <= t) {
            self.adapter_due = None;
            out.append(&mut self.adapter);
        }
    }

    /// Transmission `j` of the line, for a collision's record: who sent what, from when.
    fn describe(&self, j: usize) -> String {
        let t = &self.line[j];
        match t.board {
            None => format!("noise from {} µs", t.start),
            Some(b) => format!(
                "board {}'s reply {:02x} to a command {}, {} bytes from {} µs, its longest \
                 pause so far {} µs",
                self.boards[b].address,
                t.bytes[0],
                if t.addressed {
                    "to it"
                } else {
                    "to every board"
                },
                t.bytes.len(),
                t.start,
                t.longest_gap
            ),
        }
    }

    /// Whether board `i`'s reply still going out paused for [`STALL_GAP`] or more.
    pub(super) fn stalled(&self, i: usize) -> bool {
        self.line
            .iter()
            .any(|t| t.board == Some(i) && t.sent < t.bytes.len() && t.longest_gap >= STALL_GAP)
    }

    /// Drops what board `i` still had to send.
    pub(super) fn cut(&mut self, i: usize) {
        let mut cut = 0;
        for t in &mut self.line {
            if t.board == Some(i) && t.sent < t.bytes.len() {
                t.bytes.truncate(t.sent);
                cut += 1;
            }
        }
        self.line.retain(|t| !t.bytes.is_empty());
        if let Some(b) = self.boards.get_mut(i) {
            b.stats.replies_cut += cut;
        }
    }

    /// Board `i`'s reply `bytes`, starting at link time `start` (`addressed`: to a command
    /// addressed to it alone), goes on the line, unless the line cuts it short to nothing.
    pub(super) fn send(&mut self, i: usize, start: Micros, mut bytes: Vec<u8>, addressed: bool) {
        if bytes.is_empty() {
            return;
        }
        if self.cfg.cut > 0.0 && self.faults.chance(self.cfg.cut) {
            let keep = self.faults.below(bytes.len() as u64) as usize;
            bytes.truncate(keep);
            self.stats.replies_cut += 1;
            if bytes.is_empty() {
                return;
            }
        }
        let excused = addressed
            && self.line.iter().any(|t| {
                t.board != Some(i) && t.sent < t.bytes.len() && t.longest_gap >= STALL_GAP
            });
        self.line.push(Transmission {
            board: Some(i),
            start,
            bytes,
            sent: 0,
            garbled: false,
            addressed,
            last_out: None,
            longest_gap: 0,
            garbled_by: None,
            excused,
        });
    }

    /// Every byte whose time on the line is over by link time `now`, in time order, with its
    /// transmission (one framing error, `0x00`, per byte time where transmissions overlap,
    /// paced by the first); and the transmissions garbled, each with one that overlapped it.
    pub(super) fn bytes_over(&self, now: Micros) -> (Vec<LineByte>, Vec<(usize, usize)>) {
        let bt = self.cfg.byte_time;
        // Every byte whose time on the line is over, in time order.
        let spans: Vec<(Micros, Micros)> = self
            .line
            .iter()
            .map(|t| (t.start, self.end_of(t)))
            .collect();
        let mut bytes: Vec<LineByte> = Vec::new();
        let mut garbled = Vec::new();
        for (ti, t) in self.line.iter().enumerate() {
            for k in t.sent..t.bytes.len() {
                let slot = t.start + k as Micros * bt;
                if slot + bt > now {
                    break;
                }
                let others: Vec<usize> = spans
                    .iter()
                    .enumerate()
                    .filter(|&(j, &(s, e))| j != ti && s < slot + bt && e > slot)
                    .map(|(j, _)| j)
                    .collect();
                if others.is_empty() {
                    bytes.push((slot, ti, t.bytes[k]));
                    continue;
                }
                // One framing error per byte time, paced by the first transmission.
                let first = others.iter().all(|&j| (spans[j].0, j) > (t.start, ti));
                if first {
                    bytes.push((slot, ti, 0x00));
                }
                if !first || t.bytes[k] != 0x00 {
                    garbled.push((ti, others[0]));
                }
            }
        }
        bytes.sort_by_key(|&(at, ti, _)| (at, ti));
        (bytes, garbled)
    }

    /// Marks the transmissions that others garbled: each with the first that did, excused
    /// when one that garbled it was (neither side's collision is the host's then).
    pub(super) fn mark_garbled(&mut self, garbled: Vec<(usize, usize)>) {
        for (ti, other) in garbled {
            if self.line[ti].garbled_by.is_none() {
                let why = self.describe(other);
                self.line[ti].garbled_by = Some(why);
            }
            // Garbled by a reply the host could not have known of: neither side's collision
            // is the host's.
            if self.line[other].excused {
                self.line[ti].excused = true;
            }
            self.line[ti].garbled = true;
        }
    }

    /// The bytes off the line, through its faults (a byte lost, a bit flipped in one), to the
    /// adapter.
    pub(super) fn through_faults(&mut self, bytes: Vec<LineByte>, out: &mut Vec<u8>) {
        let bt = self.cfg.byte_time;
        for (slot, ti, byte) in bytes {
            let reply = self.line[ti].board.is_some();
            let byte = if reply && self.cfg.lossy > 0.0 && self.loss.chance(self.cfg.lossy) {
                self.stats.bytes_dropped += 1;
                continue;
            } else if reply && self.cfg.garble > 0.0 && self.faults.chance(self.cfg.garble) {
                self.stats.bytes_garbled += 1;
                byte ^ (1 << self.faults.below(8))
            } else {
                byte
            };
            self.adapter_takes(slot + bt, byte, out);
        }
    }

    /// Moves the transmissions on to link time `now`: the bytes out counted (noise), the
    /// replies that ended counted for their boards; the next burst of noise is due after one
    /// began.
    pub(super) fn move_on(&mut self, now: Micros) {
        let bt = self.cfg.byte_time;
        let mut noise_started = None;
        for t in &mut self.line {
            let done = ((now - t.start).max(0) / bt) as usize;
            let before = t.sent;
            t.sent = done.min(t.bytes.len()).max(t.sent);
            if t.sent > before {
                if let Some(last) = t.last_out {
                    t.longest_gap = t.longest_gap.max(now - last);
                }
                t.last_out = Some(now);
            }
            if t.board.is_none() {
                self.stats.noise_bytes += (t.sent - before) as u64;
                if before == 0 && t.sent > 0 {
                    noise_started = Some(t.start);
                }
            }
            if let Some(i) = t.board
                && before < t.bytes.len()
                && t.sent == t.bytes.len()
            {
                reply_ended(&mut self.boards[i].stats, t);
            }
        }
        if let Some(at) = noise_started {
            self.schedule_noise(at);
        }
    }

    /// Drops the finished transmissions: one is kept while another one still to come could
    /// overlap it.
    pub(super) fn drop_finished(&mut self) {
        let open_from = self
            .line
            .iter()
            .filter(|t| t.sent < t.bytes.len())
            .map(|t| t.start)
            .min()
            .unwrap_or(Micros::MAX);
        let bt = self.cfg.byte_time;
        self.line.retain(|t| {
            t.sent < t.bytes.len() || t.start + t.bytes.len() as Micros * bt > open_from
        });
    }
}

/// Transmission `t`, a reply, went out to its end: counted in its board's `s`, as garbled, as
/// a collision (the host's, or the emulator's own stall's), described.
fn reply_ended(s: &mut BusBoardStats, t: &Transmission) {
    s.replies_sent += 1;
    if t.garbled {
        s.replies_garbled += 1;
        if t.addressed {
            if t.excused {
                s.collisions_in_stalls += 1;
            } else {
                s.collisions += 1;
            }
            if s.collided_with.len() < 8 {
                s.collided_with.push(format!(
                    "reply {:02x} from {} µs{}: {}",
                    t.bytes[0],
                    t.start,
                    if t.excused { " (in a stall)" } else { "" },
                    t.garbled_by.as_deref().unwrap_or("?")
                ));
            }
        }
    }
}
