//! What a board's clock shows for its game's events (`[clock]` in the configuration,
//! `docs/configuration.md`): the move just made, `ILLEGAL` on an illegal move, `ARBITER` on
//! the other irregularities, each for a few seconds before the times come back. Sans-IO: the
//! port task hands the events and the time in and sends what comes out to the session
//! ([`super::Session::show`]), which alone knows how its clocks show a text.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::ClockShow;
use crate::core::event::{CoreEvent, EventKind};
use crate::core::vocab::IrregularityCode;

/// Texts on the clock (DGT 3000 only; other clocks are left alone).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockConfig {
    /// Show texts at all.
    pub text: bool,
    /// Show each move made (its SAN) on the clock.
    pub show_moves: bool,
    /// Show `ILLEGAL` on an illegal move and `ARBITER` on other irregularities.
    pub show_irregularities: bool,
    /// How long a text stays before the times come back, in seconds.
    pub text_secs: u64,
}

impl Default for ClockConfig {
    fn default() -> Self {
        ClockConfig {
            text: true,
            show_moves: false,
            show_irregularities: true,
            text_secs: 3,
        }
    }
}

impl ClockConfig {
    /// The text a clock shows for `event`, if any.
    pub fn text_for(&self, event: &EventKind) -> Option<String> {
        if !self.text {
            return None;
        }
        match event {
            EventKind::MoveMade { san, .. } if self.show_moves => Some(san.clone()),
            EventKind::Irregularity { code, .. } if self.show_irregularities => {
                Some(if *code == IrregularityCode::IllegalMove {
                    "ILLEGAL".to_string()
                } else {
                    "ARBITER".to_string()
                })
            }
            _ => None,
        }
    }
}

/// One clock's text: what to show for the events of its board, and when the times come back.
#[derive(Debug, Default)]
pub struct ClockText {
    /// When to show the times again (a text is showing).
    until: Option<Instant>,
}

impl ClockText {
    /// The board published `events` at `now`: the texts to show, in order (the times come
    /// back `cfg.text_secs` after the last).
    pub fn on_events(
        &mut self,
        cfg: &ClockConfig,
        now: Instant,
        events: &[CoreEvent],
    ) -> Vec<ClockShow> {
        let shows: Vec<ClockShow> = events
            .iter()
            .filter_map(|e| cfg.text_for(&e.kind))
            .map(ClockShow::Text)
            .collect();
        if !shows.is_empty() {
            self.until = Some(now + Duration::from_secs(cfg.text_secs));
        }
        shows
    }

    /// At `now`: the times again once a text's time is over.
    pub fn due(&mut self, now: Instant) -> Option<ClockShow> {
        self.until.take_if(|t| *t <= now).map(|_| ClockShow::Times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Color, Square};

    fn event(kind: EventKind) -> CoreEvent {
        CoreEvent {
            t: 0,
            game: 1,
            kind,
        }
    }

    fn moved(san: &str) -> CoreEvent {
        event(EventKind::MoveMade {
            ply: 1,
            san: san.into(),
            uci: "e2e4".parse().unwrap(),
            fen: String::new(),
            recovered: false,
        })
    }

    fn irregular(code: IrregularityCode) -> CoreEvent {
        event(EventKind::Irregularity {
            ply: 1,
            code,
            rule: code.rule(),
            player: Color::White,
            squares: vec![Square::E2],
            detail: String::new(),
        })
    }

    fn text(s: &str) -> ClockShow {
        ClockShow::Text(s.into())
    }

    #[test]
    fn irregularities_are_shown_by_default_and_moves_when_asked() {
        let t0 = Instant::now();
        let mut clock = ClockText::default();
        let cfg = ClockConfig::default();
        let events = [
            moved("e4"),
            irregular(IrregularityCode::IllegalMove),
            irregular(IrregularityCode::TouchedPieceNotMoved),
        ];
        assert_eq!(
            clock.on_events(&cfg, t0, &events),
            [text("ILLEGAL"), text("ARBITER")]
        );
        let moves = ClockConfig {
            show_moves: true,
            show_irregularities: false,
            ..cfg.clone()
        };
        assert_eq!(clock.on_events(&moves, t0, &events), [text("e4")]);
        let none = ClockConfig {
            text: false,
            show_moves: true,
            ..cfg
        };
        assert!(clock.on_events(&none, t0, &events).is_empty());
    }

    #[test]
    fn the_times_come_back_once_the_last_texts_time_is_over() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let cfg = ClockConfig::default();
        let mut clock = ClockText::default();
        assert_eq!(clock.due(t0 + 10 * s), None, "no text shown");
        clock.on_events(&cfg, t0, &[irregular(IrregularityCode::IllegalMove)]);
        // A second text a second later: its own three seconds.
        clock.on_events(&cfg, t0 + s, &[irregular(IrregularityCode::IllegalMove)]);
        assert_eq!(clock.due(t0 + 3 * s), None);
        assert_eq!(clock.due(t0 + 4 * s), Some(ClockShow::Times));
        assert_eq!(clock.due(t0 + 5 * s), None, "once");
        // Events without a text leave a showing text alone.
        clock.on_events(
            &cfg,
            t0 + 5 * s,
            &[irregular(IrregularityCode::IllegalMove)],
        );
        assert!(clock.on_events(&cfg, t0 + 6 * s, &[moved("e4")]).is_empty());
        assert_eq!(clock.due(t0 + 8 * s), Some(ClockShow::Times));
    }
}
