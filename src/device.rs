//! One board's pipeline, the same live and in replay: its driver's decoder and its core state
//! machine, and [`apply_record`], the one function that applies a capture record to it (every
//! replay, `crate::replay::Session`, goes through it: `eboardd replay`, paced replay and the
//! daemon's rebuild after a restart).

use serde_json::Value;

use crate::capture::RecordKind;
use crate::core::engine::{BoardEngine, EngineConfig};
use crate::core::event::CoreEvent;
use crate::core::observation::{Micros, Observation, OperatorAction};
use crate::driver::{BoardDriver, Decoder, Message};

pub use crate::pgn::SET_TAGS;
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
        Device {
            id: id.to_string(),
            driver,
            decoder: driver.unit_decoder(unit),
            engine: BoardEngine::new(cfg),
            messages: Vec::new(),
        }
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
    /// Bytes fed to the decoder, or nothing for the core (`tx`, `note`).
    Fed,
    /// An operator action, handled by the core.
    Operator(OperatorAction),
    /// A `set_tags` record: PGN tags, not for the core.
    Tags(TagUpdate),
    /// An operator record that is no operator action this build knows.
    Ignored {
        /// The record.
        value: &'a Value,
        /// Why it could not be read.
        error: serde_json::Error,
    },
}

/// Whether an operator record is a `set_tags` record (PGN tags, not for the core).
pub fn is_set_tags(op: &Value) -> bool {
    op.get("action").and_then(Value::as_str) == Some(SET_TAGS)
}

/// Applies one capture record at `t` to `device`; events go to `out`.
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
        RecordKind::Op(value) if is_set_tags(value) => Applied::Tags(TagUpdate::read(value)),
        RecordKind::Op(value) => match serde_json::from_value::<OperatorAction>(value.clone()) {
            Ok(action) => {
                let obs = Observation::Operator(action);
                device.engine.handle(t, &obs, out);
                match obs {
                    Observation::Operator(action) => Applied::Operator(action),
                    _ => Applied::Fed,
                }
            }
            Err(error) => Applied::Ignored { value, error },
        },
        RecordKind::Tx(_) | RecordKind::Note(_) => Applied::Fed,
    }
}
