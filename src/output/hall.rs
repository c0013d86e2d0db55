//! The hall check served: every board's facts gathered from the hub's round model (link,
//! players, battery, the clock seen in games) and from the boards' engines ([`Hub::senses`]:
//! every field as sensed, the clock's last reading), then checked by
//! [`crate::round::check`]. Read by `GET /api/v1/round/check`, the arbiter page and
//! `/metrics`.

use super::hub::Hub;
use super::metrics::RoundGauges;
use super::model::{BoardState, LinkState, Pairing};
use crate::round::check::{BoardFacts, Expected, Link, RoundCheck, Scope, check_round};

/// The check's view of a board's link.
fn link_of(b: &BoardState) -> Link {
    match b.link() {
        LinkState::Active => Link::Active,
        LinkState::NotResponding => Link::NotResponding,
        LinkState::Disconnected => Link::Disconnected,
        LinkState::Unknown => Link::NeverSeen,
    }
}

/// Whether a pairing names a player (a configured board's entry may name none).
fn names_a_player(p: &Pairing) -> bool {
    p.white.name.is_some() || p.black.name.is_some()
}

/// The hall as the metrics show it at a scrape: boards by link state, irregularities open, and
/// the hall check's boards checked and ready.
pub fn gauges(hub: &Hub) -> RoundGauges {
    let hall = round_check(hub, None);
    RoundGauges {
        hall_checked: hall.boards_checked as i64,
        hall_ready: hall.boards_ready as i64,
        ..hub.with_round(RoundGauges::count)
    }
}

/// The hall check of the round in force on `hub`, against the standard start or Chess960
/// position `chess960`. With a round loaded (a pairing naming a player) its paired boards are
/// checked, connected or not, and the other connected boards listed as unpaired; with none,
/// every connected board is.
pub fn round_check(hub: &Hub, chess960: Option<u16>) -> RoundCheck {
    // The boards' own locks are taken (and let go) before the round's.
    let senses = hub.senses();
    hub.with_round(|r| {
        let info = &r.info;
        let loaded = info.pairings.values().any(names_a_player);
        let scope = if loaded {
            Scope::Round
        } else {
            Scope::Connected
        };
        let mut facts = Vec::new();
        let mut unpaired = Vec::new();
        for b in r.boards() {
            let connected = matches!(link_of(b), Link::Active | Link::NotResponding);
            let pairing = info.pairings.get(&b.id).filter(|p| names_a_player(p));
            let inside = match scope {
                Scope::Round => pairing.is_some(),
                Scope::Connected => connected,
            };
            if !inside {
                if connected {
                    unpaired.push(b.id.clone());
                }
                continue;
            }
            facts.push(BoardFacts {
                id: &b.id,
                number: b.number,
                link: link_of(b),
                senses: senses.get(&b.id),
                clock_seen: b.status.clock_connected == Some(true) || b.clock.is_some(),
                pairing,
                battery: b.status.battery.as_deref(),
            });
        }
        let expected = Expected::new(info.time_control.as_deref(), chess960);
        check_round(info.round, scope, &facts, unpaired, &expected)
    })
}
