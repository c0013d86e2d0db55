//! The emulator of each board family (`crate::family::FAMILIES`): the sim side's column of the
//! family table, kept here so that the production table names nothing of the simulator. `eboardd
//! simulate`, `eboardd demo` and the tests make a port's emulated boards with [`emulate`]; a
//! test checks that every family has its row.

use crate::driver::{certabo, chessnut, dgt, millennium};
use crate::family::Family;
use crate::sim::emulator::certabo::{CertaboConfig, CertaboEmulator};
use crate::sim::emulator::dgt_bus::{BusBoardConfig, ChainConfig, ChainEmulator};
use crate::sim::emulator::millennium::MillenniumEmulator;
use crate::sim::emulator::runner::EmulatedBoard;
use crate::sim::emulator::{Emulator, EmulatorConfig, Script};

/// One board for an emulator to play: the players' script and the board's settings (serial
/// number, clock, line noise; each family takes what applies to it).
#[derive(Debug, Clone)]
pub struct ScriptedBoard {
    /// The players' script.
    pub script: Script,
    /// The board's settings.
    pub config: EmulatorConfig,
}

/// Builds the emulator of one port's boards (one board, or a chain's), seeded with `seed`;
/// a one-line reason when the boards cannot be made.
pub type Emulate =
    fn(boards: Vec<ScriptedBoard>, seed: u64) -> Result<Box<dyn EmulatedBoard>, String>;

/// The emulator of each family, by the family's name.
pub static EMULATORS: &[(&str, Emulate)] = &[
    (dgt::NAME, emulate_dgt),
    (dgt::bus::NAME, emulate_dgt_bus),
    (millennium::NAME, emulate_millennium),
    (certabo::NAME, emulate_certabo),
    (chessnut::NAME, emulate_gatt_only),
];

/// The emulator of `family`, if it has one (every family of the table has: a test checks).
pub fn emulator(family: &Family) -> Option<Emulate> {
    EMULATORS
        .iter()
        .find(|(name, _)| *name == family.name())
        .map(|(_, e)| *e)
}

/// `boards` on one port of `family`, emulated with `seed`; a one-line reason when they cannot be.
pub fn emulate(
    family: &Family,
    boards: Vec<ScriptedBoard>,
    seed: u64,
) -> Result<Box<dyn EmulatedBoard>, String> {
    let make = emulator(family).ok_or_else(|| format!("no emulator for {}", family.name()))?;
    make(boards, seed)
}

fn one(mut boards: Vec<ScriptedBoard>) -> Result<ScriptedBoard, String> {
    match boards.len() {
        1 => Ok(boards.remove(0)),
        n => Err(format!("one board per port, not {n}")),
    }
}

fn emulate_dgt(boards: Vec<ScriptedBoard>, _seed: u64) -> Result<Box<dyn EmulatedBoard>, String> {
    let b = one(boards)?;
    Ok(Box::new(Emulator::new(b.script, b.config)))
}

fn emulate_dgt_bus(
    boards: Vec<ScriptedBoard>,
    seed: u64,
) -> Result<Box<dyn EmulatedBoard>, String> {
    let mut cfg = ChainConfig {
        seed,
        ..ChainConfig::default()
    };
    let mut scripts = Vec::new();
    for b in boards {
        cfg.boards.push(BusBoardConfig {
            serial: b.config.serial,
            clock: b.config.clock,
            ..BusBoardConfig::numbered(0)
        });
        scripts.push(b.script);
    }
    ChainEmulator::new(scripts, cfg)
        .map(|c| Box::new(c) as Box<dyn EmulatedBoard>)
        .map_err(|e| e.to_string())
}

fn emulate_millennium(
    boards: Vec<ScriptedBoard>,
    _seed: u64,
) -> Result<Box<dyn EmulatedBoard>, String> {
    let b = one(boards)?;
    Ok(Box::new(MillenniumEmulator::new(
        Emulator::new(b.script, b.config),
        (1, 4),
    )))
}

fn emulate_certabo(
    boards: Vec<ScriptedBoard>,
    seed: u64,
) -> Result<Box<dyn EmulatedBoard>, String> {
    let b = one(boards)?;
    let cfg = if b.config.noise_every.is_some() {
        CertaboConfig::noisy(seed)
    } else {
        CertaboConfig {
            seed,
            ..CertaboConfig::default()
        }
    };
    Ok(Box::new(CertaboEmulator::new(
        Emulator::new(b.script, b.config),
        cfg,
    )))
}

/// A Bluetooth LE family: its boards are emulated behind the stand-in BlueZ
/// (`crate::sim::bluez`, a GATT board: [`crate::sim::emulator::gatt::GattBoard`]), not on a pty.
fn emulate_gatt_only(
    _boards: Vec<ScriptedBoard>,
    _seed: u64,
) -> Result<Box<dyn EmulatedBoard>, String> {
    Err(GATT_ONLY.into())
}

/// Why a Bluetooth LE family cannot be emulated on a pty.
pub const GATT_ONLY: &str = "a Bluetooth LE family: its boards are emulated behind the stand-in BlueZ (the tests), not on a pty";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::FAMILIES;

    #[test]
    fn every_family_has_one_emulator_and_every_emulator_a_family() {
        for f in FAMILIES {
            let rows = EMULATORS.iter().filter(|(n, _)| *n == f.name()).count();
            assert_eq!(rows, 1, "{}", f.name());
        }
        for (name, _) in EMULATORS {
            assert!(crate::family::by_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn every_family_emulates_its_boards() {
        use crate::sim::emulator::runner::EmulatedBoard as _;
        let games = crate::daemon::demo::demo_games();
        let spec = |i: usize| ScriptedBoard {
            script: Script::from_games(
                &games[i..=i],
                &crate::sim::SimConfig::new(crate::sim::Style::Human, i as u64),
                1_000_000,
            ),
            config: EmulatorConfig {
                serial: format!("{:05}", 10001 + i),
                ..EmulatorConfig::default()
            },
        };
        for f in FAMILIES {
            let emulate = emulator(f).unwrap();
            if f.driver.transport().gatt().is_some() {
                let refused = emulate(vec![spec(0)], 1).err();
                assert_eq!(refused.as_deref(), Some(GATT_ONLY), "{}", f.name());
                continue;
            }
            let em = emulate(vec![spec(0)], 1).unwrap();
            assert!(!em.finished(), "{}", f.name());
            let two = emulate(vec![spec(0), spec(1)], 1);
            assert_eq!(two.is_ok(), f.caps.boards_per_port > 1, "{}", f.name());
        }
    }
}
