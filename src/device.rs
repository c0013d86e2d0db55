//! One board's pipeline, the same live and in replay: its driver's decoder and its core state
//! machine, and [`apply_record`], the one function that applies a capture record to it (every
//! replay, `crate::replay::Playback`, goes through it: `eboardd replay`, paced replay and the
//! daemon's rebuild after a restart).

use serde_json::Value;

use crate::capture::{OpRecord, RecordKind};
use crate::core::engine::{BoardEngine, EngineConfig};
use crate::core::event::CoreEvent;
use crate::core::observation::{LinkChange, Micros, Observation, OperatorAction};
use crate::driver::{BoardDriver, Decoder, Message};

use crate::pgn::TagUpdate;

/// One device: its decoder and its state machine.
#[derive(Debug)]
pub struct Device {
    /// Device id as in the capture.
    pub id: String,
    driver: &'static dyn BoardDriver,
    decoder: Box<dyn Decoder>,
    /// The board's state machine.
    pub engine: BoardEngine,
    /// The board's serial number as its capture's header gives it (in its link events).
    serial: Option<String>,
    messages: Vec<Message>,
}

impl Device {
    /// A DGT device (the default driver) with a fresh decoder and engine.
    pub fn new(id: &str, cfg: EngineConfig) -> Self {
        Device::with_driver(id, crate::family::default_driver(), cfg)
    }

    /// A device of the given driver with a fresh decoder and engine.
    pub fn with_driver(id: &str, driver: &'static dyn BoardDriver, cfg: EngineConfig) -> Self {
        Device::for_unit(id, driver, crate::session::SINGLE, cfg)
    }

    /// Board `unit` of a port of `driver`'s family (a bus address on a chain: its decoder
    /// takes only that board's frames), with a fresh decoder and engine.
    pub fn for_unit(
        id: &str,
        driver: &'static dyn BoardDriver,
        unit: crate::session::Unit,
        cfg: EngineConfig,
    ) -> Self {
        // A family whose boards report only when polled says so before the first poll.
        let cfg = EngineConfig {
            polled: cfg.polled || driver.polled(),
            ..cfg
        };
        Device {
            id: id.to_string(),
            driver,
            decoder: driver.unit_decoder(unit),
            engine: BoardEngine::new(cfg),
            serial: None,
            messages: Vec::new(),
        }
    }

    /// The same device, telling `serial` as its serial number (its header's).
    pub fn with_serial(mut self, serial: Option<String>) -> Self {
        self.serial = serial;
        self
    }

    /// The messages decoded from the last bytes received ([`Device::receive`]): the session
    /// messages go to the port's session, so that every chunk is decoded once.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The decoder's counters so far: bytes dropped while resynchronising, frames rejected.
    pub fn line_counters(&self) -> (u64, u64) {
        (self.decoder.dropped_bytes(), self.decoder.bad_frames())
    }

    /// Whether its decoder holds nothing between frames ([`Decoder::at_rest`]).
    pub fn at_rest(&self) -> bool {
        self.decoder.at_rest()
    }

    /// The device's driver.
    pub fn driver(&self) -> &'static dyn BoardDriver {
        self.driver
    }

    /// Feed received bytes; events go to `out`.
    pub fn receive(&mut self, t: Micros, bytes: &[u8], out: &mut Vec<CoreEvent>) {
        self.messages.clear();
        self.decoder.decode(bytes, &mut self.messages);
        self.observe(t, out);
    }

    /// A notification from Bluetooth LE characteristic `char` at `t`, decoded by the driver
    /// ([`crate::driver::Decoder::notified`]); its observations go to the core as in
    /// [`Device::receive`].
    pub fn notified(&mut self, t: Micros, char: &str, bytes: &[u8], out: &mut Vec<CoreEvent>) {
        self.messages.clear();
        self.decoder.notified(char, bytes, &mut self.messages);
        self.observe(t, out);
    }

    /// The observations among the messages just decoded go to the core.
    fn observe(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        for msg in &self.messages {
            if let Message::Observation(obs) = msg {
                self.engine.handle(t, obs, out);
            }
        }
    }
}

/// What a record was, beyond the events it caused.
#[derive(Debug)]
pub enum Applied<'a> {
    /// Bytes fed to the decoder, a link change fed to the core, or nothing for the core
    /// (`tx`, `note`).
    Fed,
    /// An operator action, handled by the core.
    Operator(&'a OperatorAction),
    /// A `set_tags` record: PGN tags, not for the core.
    Tags(&'a TagUpdate),
    /// An operator record that is no operator action this build knows.
    Ignored {
        /// The record.
        value: &'a Value,
        /// Why it could not be read.
        error: &'a str,
    },
}

/// Applies one capture record at `t` to `device`; events go to `out`. The live board applies
/// each record it writes through here too, so the core hears exactly what the capture holds.
pub fn apply_record<'a>(
    device: &mut Device,
    t: Micros,
    kind: &'a RecordKind,
    out: &mut Vec<CoreEvent>,
) -> Applied<'a> {
    match kind {
        RecordKind::Rx(bytes) => {
            device.receive(t, bytes, out);
            Applied::Fed
        }
        RecordKind::Notify { char, bytes } => {
            device.notified(t, char, bytes, out);
            Applied::Fed
        }
        RecordKind::Op(OpRecord::SetTags(tags)) => Applied::Tags(tags),
        RecordKind::Op(OpRecord::Action(action)) => {
            device
                .engine
                .handle(t, &Observation::Operator(action.clone()), out);
            Applied::Operator(action)
        }
        RecordKind::Op(OpRecord::Unknown { value, error }) => Applied::Ignored { value, error },
        RecordKind::Link(change) => {
            let driver = device.driver.name().to_string();
            let serial = device.serial.clone();
            let obs = match change {
                LinkChange::Up => Observation::Connected { driver, serial },
                LinkChange::Down => Observation::Disconnected { driver, serial },
            };
            device.engine.handle(t, &obs, out);
            Applied::Fed
        }
        RecordKind::Tx(bytes) => {
            device.decoder.sent(bytes);
            Applied::Fed
        }
        RecordKind::Write { .. } | RecordKind::Note(_) => Applied::Fed,
    }
}
