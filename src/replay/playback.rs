//! A [`Timeline`] played one record at a time ([`Playback`]), and the PGN of what it played.

use super::merge::Step;
use super::timeline::{Setup, Timeline};
use super::{Device, Sink};
use std::io;

use serde_json::Map;

use crate::capture::Header;
use crate::core::event::CoreEvent;
use crate::core::game::GameRecord;
use crate::core::observation::{ClockSide, Micros, Observation, OperatorAction};
use crate::device::{Applied, apply_record};
use crate::pgn::{self, GameTags};

/// A board as its capture's replay left it: what the daemon carries on with after a restart.
#[derive(Debug)]
pub struct Replayed {
    /// Its decoder and core, every record applied (pending decisions not taken: the board goes
    /// on live).
    pub device: Device,
    /// The tags in force at the end, when the capture carries any.
    pub tags: Option<GameTags>,
    /// White's clock side as the last `set_clock_side` record fixed it.
    pub white_clock: Option<ClockSide>,
    /// The round of each of its games, as [`Playback::pgn`] tags the game (`R` of the `Round`
    /// `"R.B"` in force at its last move); `None` where the tags give no round.
    pub rounds: Vec<Option<u32>>,
}

/// The round number of a PGN `Round` tag (`"3.12"` → 3, `"3"` → 3).
pub fn round_number(tag: &str) -> Option<u32> {
    tag.split('.').next()?.trim().parse().ok()
}

/// A [`Timeline`] being played, one record at a time.
#[derive(Debug)]
pub struct Playback {
    plan: Timeline,
    devices: Vec<Device>,
    white_clock: Vec<Option<ClockSide>>,
    /// Replay time of the last record played.
    t: Micros,
    events: Vec<CoreEvent>,
    warnings: Vec<String>,
    /// Each board keeps only its latest games ([`Playback::forgetting_finished_games`]).
    forget: bool,
}

impl Playback {
    /// Sets up the plan's devices, ready to play its first record.
    pub fn new(plan: Timeline) -> Playback {
        Playback {
            devices: plan.devices.iter().map(Setup::device).collect(),
            white_clock: vec![None; plan.devices.len()],
            warnings: plan.warnings.clone(),
            plan,
            t: 0,
            events: Vec::new(),
            forget: false,
        }
    }

    /// The session, its boards forgetting their finished games as new ones start (as the
    /// live daemon's do: [`crate::core::engine::BoardEngine::forget_finished`]), for a replay
    /// whose events are its output (a hub keeps the games): memory does not grow with the
    /// games played. [`Playback::pgn`] then has the latest games only.
    pub fn forgetting_finished_games(mut self) -> Playback {
        self.forget = true;
        self
    }

    /// Plays every record of `plan`, then lets every board take its pending decisions.
    pub fn play(plan: Timeline, sink: &mut Sink<'_>) -> io::Result<Playback> {
        let mut session = Playback::new(plan);
        session.run(sink)?;
        session.finish(sink)?;
        Ok(session)
    }

    /// [`Playback::play`] with the boards on `workers` threads (boards are independent): the
    /// same events in the same order (`sink` sees them after every board is done, in the order
    /// [`Playback::play`] gives them), the same warnings and games. `sink` `None`: no event is
    /// kept (PGN only).
    pub fn play_parallel(
        plan: Timeline,
        sink: Option<&mut Sink<'_>>,
        workers: usize,
    ) -> io::Result<Playback> {
        let n = plan.devices.len();
        if workers <= 1 || n <= 1 {
            let mut none = |_: &str, _: &CoreEvent| Ok(());
            return Playback::play(plan, sink.unwrap_or(&mut none));
        }
        let keep = sink.is_some();
        let mut plan = plan;
        let all: Vec<Step> = std::mem::take(&mut plan.steps).into_memory().into();
        let end_t = all.iter().map(|s| s.t).max().unwrap_or(0);
        let steps = all.len();
        let mut per_device: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in all.iter().enumerate() {
            per_device[s.device].push(i);
        }
        let devices: Vec<usize> = (0..n).collect();
        let results: Vec<Played> = crate::parallel::map_in_order(&devices, workers, |&d| {
            let device = plan.devices[d].device();
            play_board(device, &per_device[d], &all, (end_t, steps + d), keep)
        });
        let mut session = Playback {
            warnings: plan.warnings.clone(),
            devices: Vec::with_capacity(n),
            white_clock: Vec::with_capacity(n),
            t: end_t,
            events: Vec::new(),
            plan,
            forget: false,
        };
        let mut events: Vec<(usize, usize, CoreEvent)> = Vec::new();
        let mut warnings: Vec<(usize, String)> = Vec::new();
        for (d, (device, white, evs, warns)) in results.into_iter().enumerate() {
            session.devices.push(device);
            session.white_clock.push(white);
            events.extend(evs.into_iter().map(|(i, e)| (i, d, e)));
            warnings.extend(warns);
        }
        // Each key is one board's (a step is one board's record): a stable sort by key keeps
        // every board's own order.
        events.sort_by_key(|(i, _, _)| *i);
        warnings.sort_by_key(|(i, _)| *i);
        session
            .warnings
            .extend(warnings.into_iter().map(|(_, w)| w));
        if let Some(sink) = sink {
            for (_, d, e) in &events {
                sink(&session.plan.devices[*d].name, e)?;
            }
        }
        Ok(session)
    }

    /// Replay time of the next record, if any is left.
    pub fn next_t(&self) -> Option<Micros> {
        self.plan.steps.peek_t()
    }

    /// Plays the next record; `false` when none was left.
    pub fn step(&mut self, sink: &mut Sink<'_>) -> io::Result<bool> {
        let step = self.plan.steps.next();
        self.warnings.extend(self.plan.steps.take_warnings());
        let Some(step) = step else {
            return Ok(false);
        };
        self.t = self.t.max(step.t);
        let device = &mut self.devices[step.device];
        match apply_record(device, step.t, &step.kind, &mut self.events) {
            Applied::Ignored { value, error } => self
                .warnings
                .push(format!("ignored operator action {value}: {error}")),
            Applied::Operator(OperatorAction::SetClockSide { white }) => {
                self.white_clock[step.device] = Some(*white);
            }
            Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
        }
        if self.forget && device.engine.games().len() > 2 {
            device.engine.forget_finished();
        }
        let name = &self.plan.devices[step.device].name;
        for e in self.events.drain(..) {
            sink(name, &e)?;
        }
        Ok(true)
    }

    /// Plays every record left.
    pub fn run(&mut self, sink: &mut Sink<'_>) -> io::Result<()> {
        while self.step(sink)? {}
        Ok(())
    }

    /// End of input: every board takes its pending decisions.
    pub fn finish(&mut self, sink: &mut Sink<'_>) -> io::Result<()> {
        for (setup, device) in self.plan.devices.iter().zip(&mut self.devices) {
            device.engine.finish(self.t, &mut self.events);
            for e in self.events.drain(..) {
                sink(&setup.name, &e)?;
            }
        }
        Ok(())
    }

    /// An operator action for `board` now (at the last record's time), from outside the
    /// captures (an arbiter watching a replay); `false` for a board the replay does not have.
    pub fn operator(
        &mut self,
        board: &str,
        action: OperatorAction,
        sink: &mut Sink<'_>,
    ) -> io::Result<bool> {
        let Some(d) = self.plan.devices.iter().position(|s| s.name == board) else {
            return Ok(false);
        };
        self.devices[d]
            .engine
            .handle(self.t, &Observation::Operator(action), &mut self.events);
        for e in self.events.drain(..) {
            sink(board, &e)?;
        }
        Ok(true)
    }

    /// Board `board`'s device, to seed it before the first record is played (a restart that
    /// resumes from a saved point, `crate::core::engine::seed`); `None`: no such board.
    pub fn device_mut(&mut self, board: &str) -> Option<&mut Device> {
        let d = self.plan.devices.iter().position(|s| s.name == board)?;
        self.devices.get_mut(d)
    }

    /// The devices, in the plan's order.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        self.devices.iter()
    }

    /// Non-fatal problems met: the plan's, then those met playing (unknown operator actions).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Every game of every board as PGN, in the order the games started; each game with the
    /// tags of its own round ([`Playback::game_tags`]) and the date
    /// of its start.
    pub fn pgn(&self) -> String {
        let mut games: Vec<_> = self
            .devices
            .iter()
            .enumerate()
            .flat_map(|(d, dev)| dev.engine.games().iter().map(move |g| (d, g)))
            .collect();
        games.sort_by_key(|(d, g)| (g.started_at, *d, g.number));
        let mut out = String::new();
        for (d, game) in games {
            let tags = GameTags {
                date: self.plan.date_at(game.started_at),
                board: Some(self.plan.devices[d].name.clone()),
                ..self.game_tags(d, game)
            };
            pgn::write_game(game, &tags, &mut out);
        }
        out
    }

    /// The tags in force for `game` of device `d`. A game belongs to the round it started in
    /// (the `R` of the `Round "R.B"` in force at its start): it has the last tags of that round
    /// set before the board's next game starts, so players corrected in its round apply and
    /// the next round's players (a `set_tags` of another round, loaded while it ran or after
    /// it) do not rename it. A game whose tags name no round has those in force at its last
    /// move (at its start when it has none).
    fn game_tags(&self, d: usize, game: &GameRecord) -> GameTags {
        let round_of = |tags: &GameTags| tags.round.as_deref().and_then(round_number);
        let started = self.plan.tags_at(d, game.started_at);
        let Some(own) = round_of(&started) else {
            let at = game.moves.last().map_or(game.started_at, |m| m.made_at);
            return self.plan.tags_at(d, at);
        };
        let next = self.devices[d]
            .engine
            .games()
            .iter()
            .map(|g| g.started_at)
            .filter(|&t| t > game.started_at)
            .min()
            .unwrap_or(Micros::MAX);
        self.plan.tags[d]
            .iter()
            .rfind(|(when, tags)| *when < next && round_of(tags) == Some(own))
            .map_or(started, |(_, tags)| tags.clone())
    }

    /// Board `id` as the replay left it (a fresh wired `dgt` board when the captures have
    /// no such device).
    pub fn into_board(mut self, id: &str) -> Replayed {
        match self.plan.devices.iter().position(|s| s.name == id) {
            Some(d) => {
                let rounds = self.devices[d]
                    .engine
                    .games()
                    .iter()
                    .map(|g| self.game_tags(d, g).round.as_deref().and_then(round_number))
                    .collect();
                Replayed {
                    device: self.devices.swap_remove(d),
                    tags: self.plan.tags[d].last().map(|(_, tags)| tags.clone()),
                    white_clock: self.white_clock[d],
                    rounds,
                }
            }
            None => Replayed {
                device: Setup::of(&Header::new(Map::new()), id, id.to_string())
                    .0
                    .device(),
                tags: None,
                white_clock: None,
                rounds: Vec::new(),
            },
        }
    }
}

/// One board's part of a parallel replay: its device, White's clock side, (step, event) and
/// (step, warning) in order.
type Played = (
    Device,
    Option<ClockSide>,
    Vec<(usize, CoreEvent)>,
    Vec<(usize, String)>,
);

/// Plays one board's records (`mine`: their indices in `all`) on `device`, then its pending
/// decisions at the end of input (`end`: its time, and the key its events sort under: after
/// every step, in board order). `keep`: the events are kept.
fn play_board(
    mut device: Device,
    mine: &[usize],
    all: &[Step],
    end: (Micros, usize),
    keep: bool,
) -> Played {
    let (mut white, mut events, mut warnings) = (None, Vec::new(), Vec::new());
    let mut buf = Vec::new();
    for &i in mine {
        let step = &all[i];
        match apply_record(&mut device, step.t, &step.kind, &mut buf) {
            Applied::Ignored { value, error } => {
                warnings.push((i, format!("ignored operator action {value}: {error}")))
            }
            Applied::Operator(OperatorAction::SetClockSide { white: w }) => {
                white = Some(*w);
            }
            Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
        }
        if keep {
            events.extend(buf.drain(..).map(|e| (i, e)));
        } else {
            buf.clear();
        }
    }
    let (end_t, end_key) = end;
    device.engine.finish(end_t, &mut buf);
    if keep {
        events.extend(buf.drain(..).map(|e| (end_key, e)));
    }
    (device, white, events, warnings)
}
