//! Which board a Bluetooth LE port serves: its typed target, read from the port's path after
//! the family (`ble`, `ble:AA:BB:CC:DD:EE:FF`, `ble:name=Chessnut GO*`), and matched against
//! what a scan finds with the family's [`GattProfile`]. The configuration checks ports with it
//! and the Bluetooth port task (`daemon::ble`) looks for boards with it.

use std::path::Path;

use bluer::Address;

use super::GattProfile;

/// Which board a BLE port serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BleTarget {
    /// The board with this address (upper case, `AA:BB:CC:DD:EE:FF`).
    Address(String),
    /// The first free board whose advertised name starts with this (without regard to case).
    NamePrefix(String),
    /// The first free board of the family (its profile's name prefixes).
    Any,
}

/// A BLE port's spec was not one (`ble`, `ble:AA:BB:CC:DD:EE:FF`, `ble:name=Prefix*`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a Bluetooth LE port: write ble, ble:AA:BB:CC:DD:EE:FF or ble:name=Prefix* after the family"
)]
pub struct NotABleTarget(pub String);

impl BleTarget {
    /// Whether a port's path (after its family) is a Bluetooth LE target at all.
    pub fn is_ble(path: &Path) -> bool {
        let s = path.to_string_lossy();
        s == "ble" || s.starts_with("ble:")
    }

    /// Parses a port's path after its family.
    pub fn parse(path: &Path) -> Result<BleTarget, NotABleTarget> {
        let s = path.to_string_lossy();
        let bad = || NotABleTarget(s.to_string());
        let rest = match s.strip_prefix("ble") {
            Some("") => return Ok(BleTarget::Any),
            Some(r) => r.strip_prefix(':').ok_or_else(bad)?,
            None => return Err(bad()),
        };
        if let Some(name) = rest.strip_prefix("name=") {
            let prefix = name.strip_suffix('*').unwrap_or(name);
            if prefix.is_empty() || prefix.contains('*') {
                return Err(bad());
            }
            return Ok(BleTarget::NamePrefix(prefix.to_string()));
        }
        rest.parse::<Address>().map_err(|_| bad())?;
        Ok(BleTarget::Address(rest.to_ascii_uppercase()))
    }

    /// Whether the board at `address` advertising `name` is one this target serves.
    pub fn matches(&self, profile: &GattProfile, address: &str, name: Option<&str>) -> bool {
        let starts = |prefix: &str| {
            name.is_some_and(|n| {
                n.len() >= prefix.len()
                    && n.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
            })
        };
        match self {
            BleTarget::Address(a) => a.eq_ignore_ascii_case(address),
            BleTarget::NamePrefix(p) => starts(p),
            BleTarget::Any => profile.name_prefixes.iter().any(|p| starts(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_match() {
        let p = &crate::driver::chessnut::codec::PROFILE;
        let t = BleTarget::parse(Path::new("ble:aa:bb:cc:dd:ee:0f")).unwrap();
        assert_eq!(t, BleTarget::Address("AA:BB:CC:DD:EE:0F".into()));
        assert!(t.matches(p, "AA:BB:CC:DD:EE:0F", None));
        assert!(!t.matches(p, "AA:BB:CC:DD:EE:10", Some("Chessnut GO")));
        let t = BleTarget::parse(Path::new("ble:name=Chessnut G*")).unwrap();
        assert!(t.matches(p, "X", Some("chessnut go")));
        assert!(!t.matches(p, "X", Some("Chessnut Air")));
        let t = BleTarget::parse(Path::new("ble")).unwrap();
        assert!(t.matches(p, "X", Some("Chessnut Air")));
        assert!(!t.matches(p, "X", Some("DGT_PEGASUS")));
        assert!(!t.matches(p, "X", None));
        for bad in [
            "ble:",
            "ble:name=",
            "ble:name=*x*",
            "ble:12:34",
            "bluetooth",
            "/dev/ttyUSB0",
        ] {
            assert!(BleTarget::parse(Path::new(bad)).is_err(), "{bad}");
        }
        assert!(BleTarget::is_ble(Path::new("ble")));
        assert!(!BleTarget::is_ble(Path::new("blex")));
    }
}
