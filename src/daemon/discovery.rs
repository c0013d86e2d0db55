//! Finding boards on USB: the ids every driver knows ([`crate::driver::BoardDriver::usb_ids`])
//! mapped to their tty through sysfs, rescanned on every USB hotplug event (libusb through
//! `rusb`) or, where hotplug is missing, every two seconds.
//!
//! A board's own id is served at once; a generic id (an FTDI bridge used by countless other
//! gadgets) only after the handshake's protocol probe finds a board behind it. An id that
//! several families list (the same USB-serial bridge chip inside boards of different makers)
//! is probed by each of those families in turn, in the order of the family table; a generic
//! device that fails every probe is left alone until it is unplugged.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusb::UsbContext;
use tokio::sync::mpsc;

/// A USB id the daemon knows, with the driver whose boards carry it.
#[derive(Debug, Clone, Copy)]
pub struct KnownId {
    /// Vendor id.
    pub vid: u16,
    /// Product id; `None`: any product of the vendor.
    pub pid: Option<u16>,
    /// Shared with other devices: probe before serving.
    pub generic: bool,
    /// What it is.
    pub name: &'static str,
    /// The driver whose boards carry it.
    pub driver: &'static dyn crate::driver::BoardDriver,
}

/// Two ids are the same when they name the same device for the same family.
impl PartialEq for KnownId {
    fn eq(&self, other: &KnownId) -> bool {
        (
            self.vid,
            self.pid,
            self.generic,
            self.name,
            self.driver.name(),
        ) == (
            other.vid,
            other.pid,
            other.generic,
            other.name,
            other.driver.name(),
        )
    }
}

impl Eq for KnownId {}

/// The USB ids of every family's boards, in the family table's order.
pub fn known_ids() -> impl Iterator<Item = KnownId> {
    crate::family::FAMILIES
        .iter()
        .map(|f| f.driver)
        .flat_map(|d| {
            d.transport().usb_ids().iter().map(|u| KnownId {
                vid: u.vid,
                pid: u.pid,
                generic: u.generic,
                name: u.name,
                driver: d,
            })
        })
}

/// A tty whose USB device has a known id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The device node, e.g. `/dev/ttyACM0`.
    pub tty: PathBuf,
    /// The USB id, as the first family that lists it knows it.
    pub id: KnownId,
    /// Every family's entry for this id, in the family table's order (more than one for a
    /// bridge chip several families use: each probes it in turn).
    pub candidates: Vec<KnownId>,
    /// The USB device's sysfs path (stable while it stays plugged in).
    pub usb_path: PathBuf,
    /// The USB serial number string, when the device has one.
    pub usb_serial: Option<String>,
}

fn read_hex(path: &Path) -> Option<u16> {
    let s = std::fs::read_to_string(path).ok()?;
    u16::from_str_radix(s.trim(), 16).ok()
}

/// Every tty under `sys/class/tty` whose USB device has a known id, with its node under `dev`.
pub fn scan_sysfs(sys: &Path, dev: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(sys.join("class/tty")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name();
        // Virtual terminals have no `device` link.
        let Ok(mut d) = std::fs::canonicalize(e.path().join("device")) else {
            continue;
        };
        for _ in 0..4 {
            let (Some(vid), Some(pid)) = (
                read_hex(&d.join("idVendor")),
                read_hex(&d.join("idProduct")),
            ) else {
                if !d.pop() {
                    break;
                }
                continue;
            };
            let candidates: Vec<KnownId> = known_ids()
                .filter(|k| k.vid == vid && k.pid.is_none_or(|p| p == pid))
                .collect();
            if let Some(&id) = candidates.first() {
                let usb_serial = std::fs::read_to_string(d.join("serial"))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty());
                out.push(Found {
                    tty: dev.join(&name),
                    id,
                    candidates,
                    usb_path: d.clone(),
                    usb_serial,
                });
            }
            break;
        }
    }
    out.sort_by(|a, b| a.tty.cmp(&b.tty));
    out
}

struct Notify(mpsc::UnboundedSender<()>);

impl<T: rusb::UsbContext> rusb::Hotplug<T> for Notify {
    fn device_arrived(&mut self, _device: rusb::Device<T>) {
        let _ = self.0.send(());
    }

    fn device_left(&mut self, _device: rusb::Device<T>) {
        let _ = self.0.send(());
    }
}

/// Starts libusb hotplug notifications for the known ids on a thread of its own; every arrival
/// or departure sends `()` on `tx`. Returns `false` where hotplug is missing (no libusb
/// hotplug support, no USB at all): the caller polls instead. The thread ends when `tx`'s
/// receiver is dropped. Never panics.
pub fn start_hotplug(tx: mpsc::UnboundedSender<()>) -> bool {
    // Not `rusb::has_hotplug()`: it initialises libusb's global context and panics where
    // libusb cannot start (no USB at all, e.g. in a container). A registration on a context of
    // our own fails cleanly where hotplug is missing.
    let ctx = match rusb::Context::new() {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!("libusb unavailable ({e}); polling for USB boards");
            return false;
        }
    };
    let mut registrations: Vec<rusb::Registration<rusb::Context>> = Vec::new();
    for k in known_ids() {
        let mut b = rusb::HotplugBuilder::new();
        b.vendor_id(k.vid).enumerate(false);
        if let Some(pid) = k.pid {
            b.product_id(pid);
        }
        match b.register::<rusb::Context, _>(&ctx, Box::new(Notify(tx.clone()))) {
            Ok(r) => registrations.push(r),
            Err(e) => {
                tracing::debug!("libusb hotplug registration failed ({e}); polling");
                return false;
            }
        }
    }
    let spawned = std::thread::Builder::new()
        .name("usb-hotplug".into())
        .spawn(move || {
            let _keep = registrations;
            while !tx.is_closed() {
                if let Err(e) = ctx.handle_events(Some(Duration::from_millis(500))) {
                    tracing::debug!("libusb event handling: {e}");
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        });
    spawned.is_ok()
}

/// Which family probes a device next: the candidates that already found no board of theirs
/// behind a shared id, by USB device path.
#[derive(Debug, Default)]
pub struct Probes(std::collections::HashMap<PathBuf, usize>);

impl Probes {
    /// The candidate of `found` to serve it with now: the first one whose probe has not failed
    /// (`None`: every family tried; the device is no board).
    pub fn next<'a>(&self, found: &'a Found) -> Option<&'a KnownId> {
        let tried = self.0.get(&found.usb_path).copied().unwrap_or(0);
        found.candidates.get(tried)
    }

    /// The current candidate found no board of its family behind the device.
    pub fn failed(&mut self, usb_path: &Path) {
        *self.0.entry(usb_path.to_path_buf()).or_default() += 1;
    }

    /// Forgets devices no longer present.
    pub fn retain_present(&mut self, found: &[Found]) {
        self.0.retain(|p, _| found.iter().any(|f| &f.usb_path == p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn maps_known_usb_ids_to_their_tty() {
        let root = std::env::temp_dir().join(format!("eboardd-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sys = root.join("sys");
        let dev = |p: &str, vid: &str, pid: &str, serial: Option<&str>| {
            let d = sys.join("devices/pci0000:00/usb1").join(p);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("idVendor"), format!("{vid}\n")).unwrap();
            std::fs::write(d.join("idProduct"), format!("{pid}\n")).unwrap();
            if let Some(s) = serial {
                std::fs::write(d.join("serial"), s).unwrap();
            }
            d
        };
        let tty = |name: &str, target: &Path| {
            let d = sys.join("class/tty").join(name);
            std::fs::create_dir_all(&d).unwrap();
            symlink(target, d.join("device")).unwrap();
        };
        // CDC-ACM: tty → interface → device.
        let acm = dev("1-2", "045b", "8111", Some("A1B2"));
        std::fs::create_dir_all(acm.join("1-2:1.0")).unwrap();
        tty("ttyACM0", &acm.join("1-2:1.0"));
        // FTDI: tty → ttyUSB0 dir → interface → device.
        let ftdi = dev("1-3", "0403", "6001", None);
        std::fs::create_dir_all(ftdi.join("1-3:1.0/ttyUSB0")).unwrap();
        tty("ttyUSB0", &ftdi.join("1-3:1.0/ttyUSB0"));
        // Another product of DGT's vendor id.
        let dgt2 = dev("1-5", "045b", "8112", None);
        std::fs::create_dir_all(dgt2.join("1-5:1.0")).unwrap();
        tty("ttyACM2", &dgt2.join("1-5:1.0"));
        // Something else, and a virtual terminal.
        let other = dev("1-4", "1234", "5678", None);
        std::fs::create_dir_all(other.join("1-4:1.0")).unwrap();
        tty("ttyACM1", &other.join("1-4:1.0"));
        std::fs::create_dir_all(sys.join("class/tty/tty1")).unwrap();

        let found = scan_sysfs(&sys, Path::new("/dev"));
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].tty, Path::new("/dev/ttyACM0"));
        assert!(!found[0].id.generic);
        assert_eq!(found[0].usb_serial.as_deref(), Some("A1B2"));
        assert_eq!(found[1].tty, Path::new("/dev/ttyACM2"));
        assert!(!found[1].id.generic);
        assert_eq!(found[2].tty, Path::new("/dev/ttyUSB0"));
        assert!(found[2].id.generic);
        // One family lists the FTDI id: after its probe fails, no family is left.
        let mut probes = Probes::default();
        assert_eq!(probes.next(&found[2]).map(|k| k.driver.name()), Some("dgt"));
        probes.failed(&found[2].usb_path);
        let left = found[2].candidates.len() - 1;
        assert_eq!(probes.next(&found[2]).is_some(), left > 0);
        probes.retain_present(&found[..1]);
        assert_eq!(probes.next(&found[2]).map(|k| k.driver.name()), Some("dgt"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_real_sysfs_scan_does_not_fail() {
        let _ = scan_sysfs(Path::new("/sys"), Path::new("/dev"));
    }

    #[test]
    fn hotplug_starts_or_says_it_cannot() {
        let (tx, rx) = mpsc::unbounded_channel();
        // Either answer is fine (a machine without USB has no hotplug); a panic is not.
        let _ = start_hotplug(tx);
        drop(rx);
    }
}
