//! The daemon's descriptor budget: boards first (each board's port, its capture, a chain's
//! line capture), then clients within what is left (`output::server::Limits`).

use crate::output::server::{Limits, nofile};

/// Descriptors a board takes: its port (shared on a chain), its capture file, and one spare
/// (a capture of the next day opened before the old one is closed, a relay file written).
pub const PER_BOARD: usize = 3;

/// Descriptors the daemon takes whatever its boards: standard streams, the runtime, listening
/// sockets, the journal, udev.
pub const BASE: usize = 64;

/// Raises the soft descriptor limit to the hard one, as a server that may serve a thousand
/// boards should (the systemd unit sets both to the same value, so nothing is asked of the
/// kernel there). Returns the soft limit in force afterwards.
pub fn raise_soft_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(e) => {
                tracing::warn!("descriptor limit stays at {soft} (raising it to {hard}: {e})");
                soft
            }
        },
        Ok((soft, _)) => soft,
        Err(_) => nofile(),
    }
}

/// The line to log when `boards` boards cannot all be served under descriptor limit `limit`
/// (the client connections keep the rest), else `None`.
pub fn shortfall(boards: usize, limit: u64) -> Option<String> {
    let need = BASE + PER_BOARD * boards;
    let reserve = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(Limits::for_nofile(limit).total);
    (need > reserve).then(|| {
        let fits = reserve.saturating_sub(BASE) / PER_BOARD;
        format!(
            "{boards} boards need about {need} descriptors but the limit of {limit} keeps {reserve} \
             for boards (about {fits} boards): raise LimitNOFILE= in the systemd unit (or ulimit -n)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_boards_fit_the_units_limit_and_not_the_default_one() {
        assert_eq!(shortfall(1000, 65536), None);
        let line = shortfall(1000, 1024).expect("1,000 boards do not fit 1,024");
        assert!(line.contains("LimitNOFILE="), "{line}");
        assert!(line.contains("limit of 1024"), "{line}");
        assert_eq!(shortfall(20, 1024), None);
    }

    #[test]
    fn the_unit_sets_a_limit_that_fits_a_thousand_boards() {
        let unit = include_str!("../../systemd/eboardd.service");
        let limit: u64 = unit
            .lines()
            .find_map(|l| l.strip_prefix("LimitNOFILE="))
            .and_then(|v| v.trim().parse().ok())
            .expect("LimitNOFILE= in the unit");
        assert_eq!(shortfall(1000, limit), None, "LimitNOFILE={limit}");
        assert!(Limits::for_nofile(limit).total >= 17_500, "clients too");
    }
}
