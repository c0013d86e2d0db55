//! The host's bytes as the boards of the chain take them: bus commands gathered and
//! checksummed, and each board's answer to a command addressed to it (or to every board), or
//! why it gives none (off the line, deaf after a RESET, still busy with the previous one).

use super::frame::{checksum, command, reply, reply_frame, single_board_command};
use super::{ChainEmulator, FromStartReading};
use crate::core::observation::Micros;
use crate::driver::dgt::DgtMessage;

impl ChainEmulator {
    /// The host's `bytes`, each in at the time its line takes: bus commands gathered, their
    /// checksums checked, each carried out by the boards it addresses; every byte no board
    /// takes counted. Whether a command switched reporting on for a board.
    pub(super) fn host_bytes(&mut self, bytes: &[u8]) -> bool {
        self.observe_eeprom();
        let mut on = false;
        for &b in bytes {
            // Each host byte takes its time on the host's line.
            let at = self.host_free.max(self.link_now) + self.cfg.byte_time;
            self.host_free = at;
            if b & 0x80 != 0 {
                if !self.parser.is_empty() {
                    // A command cut short by the next one.
                    self.unknown.add(&self.parser);
                    self.parser.clear();
                }
                if (command::SEND_CLK..=command::SEND_ALL_D).contains(&b) {
                    self.parser.push(b);
                } else {
                    self.unknown.add(&[b]);
                }
                continue;
            }
            if self.parser.is_empty() {
                // Outside a bus command: a single-board command (a real chain would leave bus
                // mode; see the module documentation) or stray bytes. Not taken.
                if single_board_command(b) {
                    self.stats.single_board_bytes += 1;
                }
                self.unknown.add(&[b]);
                continue;
            }
            self.parser.push(b);
            if let [c0, c1, c2, c3] = self.parser[..] {
                self.parser.clear();
                if checksum(&[c0, c1, c2]) == c3 {
                    on |= self.command([c0, c1, c2, c3], at);
                } else {
                    self.stats.bad_checksums += 1;
                    self.unknown.add(&[c0, c1, c2, c3]);
                }
            }
        }
        on
    }

    /// How long after a command in at link time `at` board `i`'s reply starts: the boards'
    /// delay, longer while its EEPROM writes.
    fn reply_delay(&mut self, i: usize, at: Micros) -> Micros {
        let (lo, hi) = self.cfg.reply_delay;
        let base = self.delays.range(lo, hi);
        let eeprom = self.boards[i].eeprom_until - at;
        base.max(eeprom)
    }

    /// A complete command with a good checksum, its last byte in at link time `at`; whether
    /// it switched reporting on for a board.
    fn command(&mut self, c: [u8; 4], at: Micros) -> bool {
        let cmd = c[0];
        if matches!(cmd, command::END_BUSMODE | command::SEND_BRD_50B) {
            // Not modelled (see the module documentation): not taken.
            self.unknown.add(&c);
            return false;
        }
        let address = (u16::from(c[1]) << 7) | u16::from(c[2]);
        let targets: Vec<usize> = (0..self.boards.len())
            .filter(|&i| address == 0 || self.boards[i].address == address)
            .collect();
        if targets.is_empty() {
            self.stats.unaddressed += 1;
            return false;
        }
        let mut on = false;
        for i in targets {
            on |= self.board_command(i, cmd, address == 0, at);
        }
        on
    }

    /// Board `i` takes `cmd` (to it alone, or `broadcast` to every board), its last byte in at
    /// link time `at`, and answers it; whether it switched reporting on.
    fn board_command(&mut self, i: usize, cmd: u8, broadcast: bool, at: Micros) -> bool {
        if !self.takes_command(i, cmd, at) {
            return false;
        }
        let Some((delay, bytes, on)) = self.answer(i, cmd, broadcast, at) else {
            return false;
        };
        self.send(i, at + delay.max(0), bytes, !broadcast);
        on
    }

    /// Whether board `i` takes `cmd`, its last byte in at link time `at`: not while it is off
    /// the line or deaf after a RESET (missed), nor while its reply to the previous command is
    /// still going out (lost: its buffer holds one command). Every command it hears is counted.
    fn takes_command(&mut self, i: usize, cmd: u8, at: Micros) -> bool {
        let b = &mut self.boards[i];
        if b.off > 0 || at < b.deaf_until {
            b.stats.missed += 1;
            return false;
        }
        *b.stats.commands.entry(cmd).or_default() += 1;
        if self.busy(i) {
            let stalled = self.stalled(i);
            let stats = &mut self.boards[i].stats;
            if stalled {
                stats.commands_lost_in_stalls += 1;
            } else {
                stats.commands_lost += 1;
            }
            return false;
        }
        true
    }

    /// Board `i`'s answer to `cmd`, taken at link time `at`: when its reply starts after the
    /// command, the reply, and whether the command switched reporting on; `None` when it sends
    /// none.
    fn answer(
        &mut self,
        i: usize,
        cmd: u8,
        broadcast: bool,
        at: Micros,
    ) -> Option<(Micros, Vec<u8>, bool)> {
        let mut on = false;
        let address = self.boards[i].address;
        let (delay, bytes) = match cmd {
            command::PING if broadcast && self.boards[i].ignore_next_ping => {
                let b = &mut self.boards[i];
                b.ignore_next_ping = false;
                b.stats.pings_ignored += 1;
                return None;
            }
            command::PING if broadcast => (
                self.delays.range(0, self.cfg.ping_spread),
                reply_frame(reply::PING, address, &[]),
            ),
            command::PING => (
                self.reply_delay(i, at),
                reply_frame(reply::PING, address, &[]),
            ),
            command::IGNORE_NEXT_BUS_PING => {
                self.boards[i].ignore_next_ping = true;
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::PING, address, &[]),
                )
            }
            command::SEND_VERSION => {
                let (major, minor) = self.boards[i].version;
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::VERSION, address, &[major, minor]),
                )
            }
            command::SEND_BRD => (self.reply_delay(i, at), self.dump_reply(i)),
            command::SEND_CLK => (self.reply_delay(i, at), self.clock_reply(i)),
            command::SEND_CHANGES => {
                on = self.reporting_on(i);
                (self.reply_delay(i, at), self.changes_reply(i))
            }
            command::SEND_ALL_D => {
                on = self.reporting_on(i);
                let mut bytes = self.changes_reply(i);
                bytes.extend(self.clock_reply(i));
                bytes.extend(self.dump_reply(i));
                (self.reply_delay(i, at), bytes)
            }
            command::REPEAT_CHANGES => {
                let data = self.boards[i]
                    .players
                    .memory()
                    .last_changes()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default();
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::UPDATE, address, &data),
                )
            }
            command::SET_START_GAME => self.start_game(i),
            command::SEND_FROM_START => {
                let include = self.cfg.from_start == FromStartReading::IncludingUnsent;
                let data = self.boards[i].players.memory().from_start(include);
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::FROM_START, address, &data),
                )
            }
            command::RESET => {
                self.power_up_reset(i, at);
                return None;
            }
            _ => {
                // No other byte with bit 7 starts a command (see `host_bytes`).
                return None;
            }
        };
        Some((delay, bytes, on))
    }

    /// Board `i` marks a game's start in its memory (EE_START_TAG and every piece): its
    /// START_GAME_WRITTEN about 70 ms later.
    fn start_game(&mut self, i: usize) -> (Micros, Vec<u8>) {
        let address = self.boards[i].address;
        let p = &mut self.boards[i].players;
        let (t, fields) = (p.now(), *p.fields());
        p.memory_mut().start_game(t, &fields);
        let (lo, hi) = self.cfg.reply_delay;
        let jitter = self.delays.range(lo, hi) - lo;
        (
            self.cfg.start_game_delay + jitter,
            reply_frame(reply::START_GAME_WRITTEN, address, &[]),
        )
    }

    /// Board `i` restarts as at power-up, its RAM lost, and is deaf for a while after link
    /// time `at`.
    fn power_up_reset(&mut self, i: usize, at: Micros) {
        let b = &mut self.boards[i];
        b.players.set_powered(false);
        b.players.set_powered(true);
        b.ignore_next_ping = false;
        b.reporting = false;
        b.deaf_until = at + self.cfg.reset_time;
    }

    /// Board `i` is asked for its changes: its players start if they have not; whether this
    /// switched reporting on (the first request since power-up, a replug or the host's going).
    fn reporting_on(&mut self, i: usize) -> bool {
        let now = self.now;
        let b = &mut self.boards[i];
        b.started_at.get_or_insert(now);
        !std::mem::replace(&mut b.reporting, true)
    }

    /// Board `i`'s changes since the last SEND_CHANGES, as an UPDATE (taken: sent once).
    fn changes_reply(&mut self, i: usize) -> Vec<u8> {
        let b = &mut self.boards[i];
        let data = b.players.memory_mut().take_changes();
        reply_frame(reply::UPDATE, b.address, &data)
    }

    /// Board `i`'s clock, as a BWTIME.
    fn clock_reply(&self, i: usize) -> Vec<u8> {
        let b = &self.boards[i];
        reply_frame(reply::BWTIME, b.address, &b.players.clock_payload())
    }

    /// Board `i`'s 64 fields, as a BRD_DUMP.
    fn dump_reply(&self, i: usize) -> Vec<u8> {
        let b = &self.boards[i];
        let dump = DgtMessage::BoardDump(Box::new(*b.players.fields())).encode();
        reply_frame(
            reply::BRD_DUMP,
            b.address,
            dump.get(3..).unwrap_or_default(),
        )
    }
}
