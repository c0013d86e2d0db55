//! `eboardd check [--config FILE]`: the configuration and what it names, checked without
//! starting anything (as `nginx -t`, `sshd -t`). One line per problem on standard error and
//! exit status 1, or one line `OK` on standard output and 0. The systemd unit runs it before a
//! reload, so that a bad file never replaces a good one.
//!
//! Checked: the file (TOML syntax, unknown keys and values, with their line), the outputs as
//! `eboardd run` would start them (addresses, token files readable, lichess settings), every
//! configured serial port (a character device that is a terminal, which the daemon's user may
//! read and write; a port not present is only noted: it is retried until it appears), the
//! capture directory and the relay directory (writable, or creatable).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::config::{Config, Overrides};

/// `eboardd check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Configuration file to check (without one, the defaults `eboardd run` would use).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Carries out `eboardd check`.
pub fn run(a: CheckArgs) -> ExitCode {
    let (problems, notes, summary) = check(a.config.as_deref());
    for n in &notes {
        eprintln!("eboardd check: note: {n}");
    }
    if problems.is_empty() {
        println!("eboardd check: {summary}: OK");
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            eprintln!("eboardd check: {p}");
        }
        ExitCode::from(1)
    }
}

/// The problems found (each one line), the notes (things that are not problems but worth
/// saying), and what was checked (for the `OK` line).
pub fn check(path: Option<&Path>) -> (Vec<String>, Vec<String>, String) {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let name = path.map_or_else(|| "the defaults".to_string(), |p| p.display().to_string());
    let cfg = match Config::load_with(path, &Overrides::default()) {
        Ok(c) => c,
        Err(e) => return (vec![e.to_string()], notes, name),
    };
    // The outputs as `eboardd run` starts them: token files read, addresses parsed.
    let flags = match no_output_flags() {
        Ok(f) => f,
        Err(e) => return (vec![e], notes, name),
    };
    if let Err(e) = super::output::output_setup(&flags, Some(&cfg)) {
        problems.push(format!("{name}: outputs: {e}"));
    }
    for spec in &cfg.daemon.ports {
        let Ok((driver, port)) = crate::family::parse_port(spec) else {
            continue; // The configuration was checked: every port names a family.
        };
        if driver.transport().gatt().is_some() {
            continue; // A Bluetooth LE target, found by discovery.
        }
        match crate::daemon::serial::check_node(&port) {
            Ok(()) => {}
            Err(f) if !f.lasting => notes.push(format!(
                "{name}: port {}: {} (served once it appears)",
                spec.display(),
                f.reason
            )),
            Err(f) => problems.push(format!("{name}: port {}: {}", spec.display(), f.reason)),
        }
    }
    let capture = cfg.capture_dir();
    if let Err(e) = writable_or_creatable(&capture) {
        problems.push(format!(
            "{name}: capture directory {}: {e}",
            capture.display()
        ));
    }
    if let Some(relay) = cfg.outputs.relay_dir.as_deref()
        && let Err(e) = writable_or_creatable(relay)
    {
        problems.push(format!("{name}: relay directory {}: {e}", relay.display()));
    }
    let summary = format!(
        "{name} ({} port(s), {} board(s), captures in {})",
        cfg.daemon.ports.len(),
        cfg.boards.len(),
        capture.display()
    );
    (problems, notes, summary)
}

/// The output flags of `eboardd run` given none: the file's `[outputs]` fills them.
fn no_output_flags() -> Result<super::output::OutputArgs, String> {
    use clap::{Args as _, FromArgMatches as _};
    let matches = super::output::OutputArgs::augment_args(clap::Command::new("outputs"))
        .try_get_matches_from(["outputs"])
        .map_err(|e| e.to_string())?;
    super::output::OutputArgs::from_arg_matches(&matches).map_err(|e| e.to_string())
}

/// Whether this user can write in `dir`, or make it (its nearest existing ancestor is a
/// directory it can write in). Nothing is made.
fn writable_or_creatable(dir: &Path) -> Result<(), String> {
    use nix::unistd::AccessFlags;
    let absolute = std::path::absolute(dir).map_err(|e| e.to_string())?;
    let mut at: &Path = &absolute;
    let mut missing = false;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(if missing {
                    format!("{} is not a directory", at.display())
                } else {
                    "not a directory".into()
                });
            }
            // Missing, or under a path part that is no directory (found further up).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                missing = true;
                at = at.parent().ok_or("no existing parent directory")?;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    nix::unistd::access(at, AccessFlags::W_OK | AccessFlags::X_OK).map_err(|e| {
        let e = std::io::Error::from(e);
        if missing {
            format!("cannot be made in {}: {e}", at.display())
        } else {
            format!("not writable: {e}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The systemd unit checks the file before the SIGHUP of a reload (systemd stops at the
    /// first `ExecReload=` that fails), the same file the daemon runs with, and lets Bluetooth
    /// serial boards (rfcomm) be opened.
    #[test]
    fn the_unit_checks_the_file_before_a_reload_and_allows_rfcomm() {
        let unit = include_str!("../../systemd/eboardd.service");
        let values =
            |key: &str| -> Vec<&str> { unit.lines().filter_map(|l| l.strip_prefix(key)).collect() };
        let start = values("ExecStart=");
        let config = start[0].strip_prefix("/usr/bin/eboardd run ").unwrap();
        assert_eq!(
            values("ExecReload="),
            [
                format!("/usr/bin/eboardd check {config}").as_str(),
                "/bin/kill -HUP $MAINPID"
            ]
        );
        assert!(values("DeviceAllow=").contains(&"char-rfcomm rw"), "{unit}");
    }

    #[test]
    fn directories_are_writable_or_creatable_or_say_why() {
        let dir = std::env::temp_dir().join(format!("eboardd-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(writable_or_creatable(&dir), Ok(()));
        assert_eq!(writable_or_creatable(&dir.join("a/b")), Ok(()));
        let file = dir.join("file");
        std::fs::write(&file, "x").unwrap();
        let e = writable_or_creatable(&file.join("captures")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
        assert_eq!(writable_or_creatable(&file).unwrap_err(), "not a directory");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
