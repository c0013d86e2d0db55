//! The daemon's descriptor budget: boards first (each board's port, its capture, a chain's
//! line capture), then clients within what is left after a reserve (`output::server::Limits`).
//!
//! Before, the client cap was taken first (seven eighths of the limit) and the boards were told
//! to fit in the eighth left: under a limit of 4,096 the daemon logged that "about 149" of 756
//! boards fit (all 756 ran, two descriptors each) while it still allowed 3,584 clients with
//! about 2,570 descriptors free.

use crate::output::server::{Limits, nofile};

/// Descriptors a board takes: its port (shared on a chain, so fewer there) and its capture
/// file (measured: 756 emulated boards ran on two descriptors each). Short-lived ones (a
/// capture of the next day opened before the old one is closed, a relay file written) come
/// from the reserve ([`Limits::reserve`]).
pub const PER_BOARD: usize = 2;

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

/// Client connections the budget keeps room for at least, whatever the boards: the arbiter's
/// page and a few viewers.
pub const LEAST_CLIENTS: usize = 64;

/// Descriptors `boards` boards and the daemon itself take: kept from the client connections.
pub fn for_boards(boards: usize) -> usize {
    BASE + PER_BOARD * boards
}

/// The line to log when `boards` boards cannot all be served under descriptor limit `limit`
/// (with the reserve and room for [`LEAST_CLIENTS`] connections), else `None`.
pub fn shortfall(boards: usize, limit: u64) -> Option<String> {
    let need = for_boards(boards);
    let room = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(Limits::reserve(limit) + LEAST_CLIENTS);
    (need > room).then(|| {
        let fits = room.saturating_sub(BASE) / PER_BOARD;
        format!(
            "{boards} boards need about {need} descriptors but the limit of {limit} holds about \
             {fits} boards (keeping {} for spares and {LEAST_CLIENTS} clients): raise \
             LimitNOFILE= in the systemd unit (or ulimit -n)",
            Limits::reserve(limit)
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
        // The Olympiad's section: 756 boards under 4,096 fit (it said "about 149" before).
        assert_eq!(shortfall(756, 4096), None);
        let line = shortfall(2000, 4096).expect("2,000 boards do not fit 4,096");
        assert!(line.contains("about 1856 boards"), "{line}");
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
        assert!(
            Limits::for_budget(limit, for_boards(1000)).total >= 17_500,
            "clients too"
        );
    }
}
