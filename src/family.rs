//! The board families eboardd serves: one row of [`FAMILIES`] each — its driver (everything on
//! the wire: `src/driver/<name>/`) and what its boards can do. Its emulator (for `eboardd
//! simulate`, `eboardd demo` and the tests) is the sim side's business: a row of
//! `crate::sim::families::EMULATORS`, which a test holds to this table.
//!
//! Everything that lists families reads this table: the configuration's `<family>:PATH` ports
//! ([`parse_port`]), the capture header's `driver` ([`for_name_or_default`]), USB discovery
//! (each driver's ids, in the table's order: a bridge chip's id shared by several families is
//! probed by each in turn), `simulate --driver` and `demo --boards`, the udev rules
//! ([`udev_rules`], checked against `udev/70-eboardd.rules` by a test) and the boards table of `docs/boards.md`.
//! Adding a family is its driver's folder, one row here, its emulator and its row there
//! (`src/driver/TEMPLATE.md`).

use std::path::{Path, PathBuf};

use crate::driver::{BoardDriver, certabo, chessnut, dgt, millennium};

/// What a board senses on a square.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pieces {
    /// Which piece stands there (colour and kind).
    Identity,
    /// Only whether a piece stands there.
    Occupancy,
}

/// What a family's boards can do, as eboardd serves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// What the board senses.
    pub pieces: Pieces,
    /// Whether it reports each change as it happens (`false`: whole positions, from which
    /// the changes are worked out; see the driver's docs for what that costs touch-move).
    pub changes: bool,
    /// A clock on the board's cable, read (times, presses) through the board.
    pub clock: bool,
    /// A battery level the board reports (wireless boards).
    pub battery: bool,
    /// A memory of what the board sensed while no host listened, read back after a gap.
    pub memory: bool,
    /// How many boards one port can serve (1, or a chain's most).
    pub boards_per_port: usize,
}

/// One board family: a row of [`FAMILIES`].
pub struct Family {
    /// Its driver (its name is the family's name).
    pub driver: &'static dyn BoardDriver,
    /// A few words for people (the CLI's help, the demo's banner).
    pub summary: &'static str,
    /// What its boards can do.
    pub caps: Capabilities,
}

impl Family {
    /// The family's name (`dgt`, `dgt-bus`, ...): the prefix of its ports and board ids.
    pub fn name(&self) -> &'static str {
        self.driver.name()
    }
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Family")
            .field("name", &self.name())
            .field("caps", &self.caps)
            .finish()
    }
}

/// Every family eboardd serves, in the order USB discovery probes a shared id.
pub static FAMILIES: &[Family] = &[
    Family {
        driver: &dgt::Dgt,
        summary: "DGT boards (USB, serial, Bluetooth) with a DGT 3000 or XL clock",
        caps: Capabilities {
            pieces: Pieces::Identity,
            changes: true,
            clock: true,
            battery: true,
            memory: true,
            boards_per_port: 1,
        },
    },
    Family {
        driver: &dgt::DgtBus,
        summary: "a chain of DGT boards in bus mode on one port",
        caps: Capabilities {
            pieces: Pieces::Identity,
            changes: true,
            clock: true,
            battery: false,
            memory: true,
            boards_per_port: 64,
        },
    },
    Family {
        driver: &millennium::Millennium,
        summary: "Millennium ChessLink boards (no clock)",
        caps: Capabilities {
            pieces: Pieces::Identity,
            changes: false,
            clock: false,
            battery: false,
            memory: false,
            boards_per_port: 1,
        },
    },
    Family {
        driver: &certabo::Certabo,
        summary: "Certabo RFID boards (no clock)",
        caps: Capabilities {
            pieces: Pieces::Identity,
            changes: false,
            clock: false,
            battery: false,
            memory: false,
            boards_per_port: 1,
        },
    },
    Family {
        driver: &chessnut::Chessnut,
        summary: "Chessnut Air, Air+, Pro and GO boards on Bluetooth LE (no clock)",
        caps: Capabilities {
            pieces: Pieces::Identity,
            changes: false,
            clock: false,
            battery: true,
            memory: false,
            boards_per_port: 1,
        },
    },
];

/// The family of the driver used when a capture names none (captures made before drivers were
/// named) and for a port given as a plain path.
pub const DEFAULT_FAMILY: &str = dgt::NAME;

/// The family called `name`.
pub fn by_name(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name() == name)
}

/// The driver called `name`.
pub fn driver(name: &str) -> Option<&'static dyn BoardDriver> {
    by_name(name).map(|f| f.driver)
}

/// The default driver ([`DEFAULT_FAMILY`]'s).
pub fn default_driver() -> &'static dyn BoardDriver {
    FAMILIES[0].driver
}

/// The driver for a capture header's device entry: its `driver` field, or the default for
/// captures that do not say (or name a driver this build does not have, with a `warning`).
pub fn for_name_or_default(name: Option<&str>) -> (&'static dyn BoardDriver, Option<String>) {
    match name {
        None => (default_driver(), None),
        Some(n) => match driver(n) {
            Some(d) => (d, None),
            None => (
                default_driver(),
                Some(format!("unknown driver {n:?}: decoded as {DEFAULT_FAMILY}")),
            ),
        },
    }
}

/// The family whose name is the longest that prefixes a board id (`dgt-bus-01025` is a
/// `dgt-bus` board, not a `dgt` one), with the rest of the id after the `-`.
pub fn of_board_id(id: &str) -> Option<(&'static Family, &str)> {
    FAMILIES
        .iter()
        .filter_map(|f| Some((f, id.strip_prefix(f.name())?.strip_prefix('-')?)))
        .max_by_key(|(f, _)| f.name().len())
}

/// A configured port names a board family this build does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{spec:?}: unknown board family {family:?} (families: {known})")]
pub struct UnknownFamily {
    /// The port as configured.
    pub spec: String,
    /// The family it names.
    pub family: String,
    /// The families this build has, comma-separated.
    pub known: String,
}

/// The names of every family, comma-separated (for messages).
pub fn family_names() -> String {
    FAMILIES
        .iter()
        .map(Family::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A configured port: `<family>:<path>` (e.g. `millennium:/dev/ttyUSB0`) names its family; a
/// path (absolute, or relative without a `name:` prefix) is served by the default family. A
/// prefix that names no family is refused (`milenium:/dev/ttyUSB0` is no path to retry for
/// ever). Paths that contain colons further on (`/dev/serial/by-path/pci-0000:00:14.0-…`) are
/// paths.
pub fn parse_port(spec: &Path) -> Result<(&'static dyn BoardDriver, PathBuf), UnknownFamily> {
    let text = spec.to_string_lossy();
    let prefixed = text.split_once(':').filter(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    });
    match prefixed {
        None => Ok((default_driver(), spec.to_path_buf())),
        Some((name, path)) => match driver(name) {
            Some(d) => Ok((d, PathBuf::from(path))),
            None => Err(UnknownFamily {
                spec: text.to_string(),
                family: name.to_string(),
                known: family_names(),
            }),
        },
    }
}

/// The udev rules file (`udev/70-eboardd.rules`) for the table's USB ids: a board's own id gets
/// group access, a stable `/dev/eboard-<serial>` name, the systemd tag and ModemManager kept
/// away; a generic bridge chip's id (shared with countless other devices) gets no rule, as the
/// daemon probes such ports before serving them.
pub fn udev_rules() -> String {
    let mut own = String::new();
    let mut generic = String::new();
    for f in FAMILIES {
        for u in f.driver.transport().usb_ids() {
            let product = match u.pid {
                Some(p) => format!(", ATTRS{{idProduct}}==\"{p:04x}\""),
                None => String::new(),
            };
            let rule = format!(
                "ATTRS{{idVendor}}==\"{:04x}\"{product}, GOTO=\"eboardd_board\"",
                u.vid
            );
            if u.generic {
                generic.push_str(&format!("#   {} ({}): {rule}\n", u.name, f.name()));
            } else {
                own.push_str(&format!("# {} ({}).\n{rule}\n", u.name, f.name()));
            }
        }
    }
    format!("{UDEV_HEAD}{own}\n{UDEV_GENERIC}{generic}\n{UDEV_TAIL}",)
}

const UDEV_HEAD: &str = "\
# udev rules for eboardd: electronic chess boards on USB. Generated from the family table
# (src/family.rs, `family::udev_rules`); a test checks this file against it.
#
# - group access for the daemon (group \"dialout\", mode 0660: never world-writable);
# - stable symlinks /dev/eboard-<serial> (USB serial number; /dev/eboard-path-<port path> when
#   the device has none), so a board keeps its name whatever ttyACM number it gets;
# - the systemd tag, so the device is a unit (dev-eboard\\x2d<serial>.device) others can wait for;
# - ModemManager told to leave the port alone (its AT probes are garbage to a board).
#
# Install:
#   sudo install -m 0644 udev/70-eboardd.rules /etc/udev/rules.d/
#   sudo udevadm control --reload && sudo udevadm trigger --subsystem-match=tty
# Runs after 60-serial.rules, which sets ID_SERIAL_SHORT and ID_PATH_TAG for USB serial ports.

ACTION==\"remove\", GOTO=\"eboardd_end\"
SUBSYSTEM!=\"tty\", GOTO=\"eboardd_end\"

";

const UDEV_GENERIC: &str = "\
# Generic USB-serial bridge chips, shared with countless other devices: eboardd probes such
# ports with each family's handshake in turn before serving them, and needs no rule here. To name
# a known board's adapter anyway, match its USB serial number too, e.g.
#   ATTRS{idVendor}==\"0403\", ATTRS{idProduct}==\"6001\", ATTRS{serial}==\"A10KXYZ1\", GOTO=\"eboardd_board\"
";

const UDEV_TAIL: &str = "\
GOTO=\"eboardd_end\"

LABEL=\"eboardd_board\"
GROUP=\"dialout\", MODE=\"0660\"
ENV{ID_MM_DEVICE_IGNORE}=\"1\"
TAG+=\"systemd\"
ENV{ID_SERIAL_SHORT}==\"?*\", SYMLINK+=\"eboard-$env{ID_SERIAL_SHORT}\", GOTO=\"eboardd_end\"
ENV{ID_PATH_TAG}==\"?*\", SYMLINK+=\"eboard-path-$env{ID_PATH_TAG}\"

LABEL=\"eboardd_end\"
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_found_by_name_and_old_captures_default_to_dgt() {
        assert_eq!(driver("dgt").map(|d| d.name()), Some("dgt"));
        assert!(driver("nope").is_none());
        assert_eq!(for_name_or_default(None).0.name(), "dgt");
        let (d, warning) = for_name_or_default(Some("nope"));
        assert_eq!(d.name(), "dgt");
        assert!(warning.is_some());
        for name in ["millennium", "dgt-bus", "certabo"] {
            assert_eq!(driver(name).map(|d| d.name()), Some(name));
        }
        assert_eq!(default_driver().name(), DEFAULT_FAMILY);
    }

    #[test]
    fn names_are_unique_and_board_ids_find_the_longest() {
        let mut names: Vec<&str> = FAMILIES.iter().map(Family::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
        assert_eq!(
            of_board_id("dgt-bus-01025").map(|(f, s)| (f.name(), s)),
            Some(("dgt-bus", "01025"))
        );
        assert_eq!(
            of_board_id("dgt-10001").map(|(f, s)| (f.name(), s)),
            Some(("dgt", "10001"))
        );
        assert!(of_board_id("board-3").is_none());
    }

    #[test]
    fn ports_name_their_family_or_are_refused() {
        let p = |s: &str| parse_port(Path::new(s));
        let (d, path) = p("millennium:/dev/ttyUSB0").unwrap();
        assert_eq!(
            (d.name(), path.to_str().unwrap()),
            ("millennium", "/dev/ttyUSB0")
        );
        assert_eq!(p("certabo:/dev/ttyUSB1").unwrap().0.name(), "certabo");
        let (d, path) = p("/dev/ttyACM0").unwrap();
        assert_eq!((d.name(), path.to_str().unwrap()), ("dgt", "/dev/ttyACM0"));
        let by_path = "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0";
        assert_eq!(p(by_path).unwrap().1.to_str(), Some(by_path));
        let e = p("milenium:/dev/ttyUSB0").err().unwrap();
        assert_eq!(e.family, "milenium");
        for f in FAMILIES {
            assert!(e.to_string().contains(f.name()), "{e}");
        }
    }

    /// The rules file shipped (and packaged) is the one the table gives. After a change of the
    /// table's USB ids: `EBOARDD_WRITE_UDEV=1 cargo test udev` writes it.
    #[test]
    fn the_udev_rules_file_is_the_tables() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("udev/70-eboardd.rules");
        let rules = udev_rules();
        if std::env::var_os("EBOARDD_WRITE_UDEV").is_some() {
            std::fs::write(&path, &rules).unwrap();
        }
        let shipped = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            shipped, rules,
            "udev/70-eboardd.rules is not the family table's: EBOARDD_WRITE_UDEV=1 cargo test udev"
        );
        for f in FAMILIES {
            for u in f.driver.transport().usb_ids() {
                assert!(
                    shipped.contains(&format!("\"{:04x}\"", u.vid)),
                    "{}",
                    u.name
                );
            }
        }
    }
}
