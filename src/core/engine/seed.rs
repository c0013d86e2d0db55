//! A board's state machine saved at a point where it is at rest, and rebuilt from it: what a
//! restart needs to go on from that point instead of replaying the whole capture (the daemon's
//! resume points, `crate::daemon::captures::resume`).
//!
//! A seed holds only what is not at rest's default: the sensed board, the orientation, the
//! clock tracker, the games kept (the last two, as [`StoredGame`]s), the touch ledger, a press
//! waiting for its deadline, when the link dropped (until the dump after it) and a few counters.
//! **It checks itself:** [`EngineSeed::of`] rebuilds an engine from the seed (through its JSON
//! text) and gives a seed only when the rebuilt engine is the engine, every field alike (their
//! `Debug` text, which prints every field but the candidate caches). So an engine in a state
//! the seed does not hold (a displaced piece, a correction, a move being made, or a field added
//! later and not saved) gives no seed, never a wrong one.

use serde::{Deserialize, Serialize};
use shakmaty::Color;

use super::{BoardEngine, EngineConfig, PendingPress};
use crate::core::clock::ClockTracker;
use crate::core::event::ClockTimes;
use crate::core::ledger::Ledger;
use crate::core::observation::Micros;
use crate::core::sensed::{Orientation, SensedBoard};
use crate::core::stored::StoredGame;

/// One game kept by a seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedGame {
    /// Game number on the board.
    pub number: u32,
    /// When it started (board time).
    pub started_at: Micros,
    /// Its start and moves.
    #[serde(flatten)]
    pub game: StoredGame,
}

/// A board's state machine at rest, saved (see the module's documentation).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineSeed {
    sensed: SensedBoard,
    orientation: Orientation,
    clock: ClockTracker,
    games: Vec<SeedGame>,
    /// The last clock times published, and whose turn they showed (`true`: White).
    last_clock_event: Option<(ClockTimes, Option<bool>)>,
    fifty_claimed: bool,
    illegal_moves: [u32; 2],
    moves_since_press: u32,
    in_phase_from: Option<Micros>,
    last_change: Micros,
    version: u64,
    /// The last board that stood still while no game ran, a candidate set-up position.
    setup_ref: Option<SensedBoard>,
    /// A press seen before a game, kept for a set-up game whose first move it may complete.
    early_press: Option<PendingPress>,
    /// A press waiting for its deadline (whether a move is completed by it).
    #[serde(default)]
    pending_press: Option<PendingPress>,
    /// The lifts of the last turns (touch-move evidence).
    #[serde(default)]
    ledger: Ledger,
    /// When the link dropped, until the board dump after it (a capture that ends on a `link`
    /// `down` record, as after every clean stop).
    #[serde(default)]
    link_dropped_at: Option<Micros>,
    /// Whether the clock last said it is there (a reading) or not ("no clock"), for the hall
    /// check (`None`: neither yet; seeds written before it have none).
    #[serde(default)]
    clock_present: Option<bool>,
    /// The board reports only when polled.
    #[serde(default)]
    polled: bool,
}

impl EngineSeed {
    /// The seed of `engine`, when it is at rest: rebuilt from the seed's JSON text, the engine
    /// is the same in every field; else `None`.
    pub fn of(engine: &BoardEngine) -> Option<EngineSeed> {
        let seed = EngineSeed {
            sensed: engine.sensed.clone(),
            orientation: engine.orientation,
            clock: engine.clock.clone(),
            games: engine
                .games
                .iter()
                .map(|g| SeedGame {
                    number: g.number,
                    started_at: g.started_at,
                    game: StoredGame::of(g),
                })
                .collect(),
            last_clock_event: engine
                .last_clock_event
                .map(|(times, turn)| (times, turn.map(|c| c == Color::White))),
            fifty_claimed: engine.fifty_claimed,
            illegal_moves: engine.illegal_moves,
            moves_since_press: engine.moves_since_press,
            in_phase_from: engine.in_phase_from,
            last_change: engine.last_change,
            version: engine.version,
            setup_ref: engine.setup_ref.clone(),
            early_press: engine.early_press,
            pending_press: engine.pending_press,
            ledger: engine.ledger.clone(),
            link_dropped_at: engine.link_dropped_at,
            clock_present: engine.clock_present,
            polled: engine.polled,
        };
        let text = serde_json::to_string(&seed).ok()?;
        let back: EngineSeed = serde_json::from_str(&text).ok()?;
        let rebuilt = back.engine(engine.cfg.clone()).ok()?;
        (format!("{rebuilt:?}") == format!("{engine:?}")).then_some(seed)
    }

    /// The engine saved, with the tunables `cfg` (the board's, as its capture sets them up);
    /// an error names a game that does not read back.
    pub fn engine(&self, cfg: EngineConfig) -> Result<BoardEngine, String> {
        let mut games = Vec::with_capacity(self.games.len());
        for g in &self.games {
            games.push(
                g.game
                    .clone()
                    .game(g.number, g.started_at)
                    .map_err(|e| format!("game {}: {e}", g.number))?,
            );
        }
        let mut engine = BoardEngine::new(cfg);
        engine.sensed = self.sensed.clone();
        engine.orientation = self.orientation;
        engine.clock = self.clock.clone();
        engine.games = games;
        engine.last_clock_event = self.last_clock_event.map(|(times, white)| {
            (
                times,
                white.map(|w| if w { Color::White } else { Color::Black }),
            )
        });
        engine.fifty_claimed = self.fifty_claimed;
        engine.illegal_moves = self.illegal_moves;
        engine.moves_since_press = self.moves_since_press;
        engine.in_phase_from = self.in_phase_from;
        engine.last_change = self.last_change;
        engine.version = self.version;
        engine.setup_ref = self.setup_ref.clone();
        engine.early_press = self.early_press;
        engine.pending_press = self.pending_press;
        engine.ledger = self.ledger.clone();
        engine.link_dropped_at = self.link_dropped_at;
        engine.clock_present = self.clock_present;
        engine.polled = self.polled || engine.cfg.polled;
        Ok(engine)
    }

    /// The lowest number of the games kept (`None`: no game yet): games numbered below it are
    /// finished and only in the capture before the seed's point.
    pub fn first_game(&self) -> Option<u32> {
        self.games.iter().map(|g| g.number).min()
    }
}
