//! The hall check: before a round, whether every board is ready — connected, the pieces on
//! their start squares as the board senses them (not as a game record says), a clock connected
//! and set to the time control's starting times and not running, the players assigned, the
//! battery not low where the family reports one. Pure: the facts of each board in
//! ([`BoardFacts`]), a typed answer out ([`BoardCheck`], [`RoundCheck`]); the broadcast side
//! gathers the facts (`output::hall`) and serves them (`GET /api/v1/round/check`, the arbiter
//! page, `/metrics`).
//!
//! Decisions (also in `docs/broadcast.md`):
//! - No time control configured: the clock's times are *unchecked* (said so, in the board's
//!   check and in the round's `warnings`), never passed or failed silently; they do not hold the
//!   round back. The same for a time control whose starting time cannot be read.
//! - A clock shows the starting time when both faces show the first period's time (to the
//!   second), or that time plus one increment (clocks that add the first increment before the
//!   first move), and it is not running.
//! - The start position is the standard one, or Chess960 position `N` when the arbiter gives
//!   the one announced for the round; a board turned round (connector on Black's side) with the
//!   pieces right is set up (eboardd reads it turned round).
//! - With no sensed board (a server without the boards' engines behind it) the pieces are a
//!   problem ("not known here"): a board is never called ready unseen.

use std::fmt;

use serde::{Serialize, Serializer};
use shakmaty::{Board, Color, Piece, Role, Square};

use super::pairing::Pairing;
use crate::core::observation::{ClockReading, SpecialPiece, SquareReading};
use crate::core::sensed::{Orientation, SensedBoard};
use crate::core::start;

/// A board's battery charge below this (percent) is low.
pub const LOW_BATTERY_PERCENT: u32 = 20;

/// What the board senses now, from its engine: every field, and the clock.
#[derive(Debug, Clone, Default)]
pub struct BoardSenses {
    /// Every field as the board reads it.
    pub board: SensedBoard,
    /// The clock's latest reading while a clock is there (`None`: none, or "no clock").
    pub clock: Option<ClockReading>,
}

/// A board's link as the check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Connected and answering.
    Active,
    /// Connected but silent.
    NotResponding,
    /// Disconnected.
    Disconnected,
    /// Never seen in this run (a paired board whose board is not connected).
    NeverSeen,
}

/// Everything known about one board, gathered by the caller.
#[derive(Debug, Clone, Copy)]
pub struct BoardFacts<'a> {
    /// Board id.
    pub id: &'a str,
    /// Board number.
    pub number: u32,
    /// Its link.
    pub link: Link,
    /// What it senses (`None`: not known here).
    pub senses: Option<&'a BoardSenses>,
    /// Whether the daemon saw a clock on it during a game (a reading in `senses` also counts).
    pub clock_seen: bool,
    /// Its players in the loaded round.
    pub pairing: Option<&'a Pairing>,
    /// The board's battery as its family reports it (`"87%"`, `"low"`).
    pub battery: Option<&'a str>,
}

/// What a board must show, for every board of the round.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The start position's Chess960 number (518: the standard start).
    pub chess960: u16,
    start: Board,
    /// The configured time control as given.
    pub time_control: Option<String>,
    clock: ClockExpect,
}

/// What the clock must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClockExpect {
    /// No time control is configured.
    NotConfigured,
    /// The time control's starting time cannot be read.
    Unreadable,
    /// Both faces at `base` (or `base + increment`), milliseconds.
    Set { base: u32, increment: u32 },
}

impl Expected {
    /// The round's expectations: the configured time control (PGN `5400+30`, `40/5400+30:1800`,
    /// or LiveChess's `90 min/game + 30 sec/move`) and the start position (Chess960 number;
    /// `None`: the standard start).
    pub fn new(time_control: Option<&str>, chess960: Option<u16>) -> Expected {
        let chess960 = chess960.unwrap_or(start::STANDARD_960_NUMBER);
        let clock = match time_control.map(str::trim).filter(|s| !s.is_empty()) {
            None => ClockExpect::NotConfigured,
            Some(tc) => match base_of_time_control(tc) {
                Some(base) => ClockExpect::Set {
                    base,
                    increment: crate::pgn::increment_in_time_control(tc).unwrap_or(0),
                },
                None => ClockExpect::Unreadable,
            },
        };
        Expected {
            chess960,
            start: start::board_of(chess960),
            time_control: time_control.map(str::to_string),
            clock,
        }
    }

    /// The starting time every clock must show (milliseconds), when known.
    pub fn clock_start_ms(&self) -> Option<u32> {
        match self.clock {
            ClockExpect::Set { base, .. } => Some(base),
            _ => None,
        }
    }
}

/// The starting time of a time control's first period, in milliseconds: `5400+30` and
/// `40/5400+30:1800` give 5400 s, `15 min/game + 10 sec/move` 15 minutes, `1 h + 30 s` an
/// hour; `None` for a value without one (`?`, `-`, an hourglass `*180`).
pub fn base_of_time_control(value: &str) -> Option<u32> {
    let first = value.split(':').next()?.trim();
    if first.starts_with('*') {
        return None;
    }
    let base = first.split_once('+').map_or(first, |(b, _)| b).trim();
    let secs = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
    let seconds = if let Some(n) = secs(base) {
        n
    } else if let Some((moves, s)) = base.split_once('/')
        && secs(moves.trim()).is_some()
        && let Some(n) = secs(s.trim())
    {
        n
    } else {
        // Words: the first number and the unit after it.
        let digits_end = base.find(|c: char| !c.is_ascii_digit())?;
        let n = secs(&base[..digits_end])?;
        let unit = base[digits_end..].trim_start().to_ascii_lowercase();
        let per = match unit.chars().next()? {
            'h' => 3600,
            'm' | '\'' => 60,
            's' | '"' => 1,
            _ => return None,
        };
        n.checked_mul(per)?
    };
    seconds.checked_mul(1000)
}

/// Whether a check passed, found a problem, or could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Passed.
    Ok,
    /// A problem: the board is not ready.
    Problem,
    /// Not checked, and why (the reason says): it holds nothing back by itself.
    Unchecked,
}

/// A piece, a result piece or nothing, as a square holds it (`"white knight"`, `"draw
/// piece"`, `null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnSquare(pub SquareReading);

impl fmt::Display for OnSquare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            SquareReading::Empty => f.write_str("empty"),
            SquareReading::Piece(Piece { color, role }) => {
                let role = match role {
                    Role::Pawn => "pawn",
                    Role::Knight => "knight",
                    Role::Bishop => "bishop",
                    Role::Rook => "rook",
                    Role::Queen => "queen",
                    Role::King => "king",
                };
                write!(f, "{} {role}", crate::core::vocab::color_name(color))
            }
            SquareReading::Special(SpecialPiece::Draw) => f.write_str("draw piece"),
            SquareReading::Special(SpecialPiece::WhiteWins) => f.write_str("white-wins piece"),
            SquareReading::Special(SpecialPiece::BlackWins) => f.write_str("black-wins piece"),
        }
    }
}

impl Serialize for OnSquare {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            SquareReading::Empty => s.serialize_none(),
            _ => s.collect_str(self),
        }
    }
}

/// A square that does not hold what the start position puts there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WrongSquare {
    /// The square (`"g1"`), as White sees the board.
    #[serde(serialize_with = "ser_square")]
    pub square: Square,
    /// What the start position puts there (`null`: nothing).
    pub expected: OnSquare,
    /// What the board senses there (`null`: nothing).
    pub found: OnSquare,
}

fn ser_square<S: Serializer>(sq: &Square, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(sq)
}

impl fmt::Display for WrongSquare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.expected.0, self.found.0) {
            (_, SquareReading::Empty) => write!(f, "{} empty", self.square),
            (SquareReading::Empty, _) => write!(f, "{}: {}", self.square, self.found),
            _ => write!(
                f,
                "{}: {} ({} expected)",
                self.square, self.found, self.expected
            ),
        }
    }
}

/// What a check found, typed (`code` on the wire); its sentence is the check's `reason`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Finding {
    /// The board is connected and answering.
    Connected,
    /// The board is connected but silent.
    NotResponding,
    /// The board was connected and is not now.
    Disconnected,
    /// No board has been seen under this id in this run.
    NeverSeen,
    /// Not checked: the board is not connected.
    BoardAway,
    /// Every piece on its start square.
    StartPosition {
        /// Set up with the board turned round (read as such).
        reversed: bool,
    },
    /// Squares that are not as the start position wants.
    PiecesWrong {
        /// Set up with the board turned round (the squares are read as such).
        reversed: bool,
        /// The squares, a1 to h8.
        squares: Vec<WrongSquare>,
    },
    /// What the board senses is not known here.
    NotSensed,
    /// A clock is connected.
    ClockConnected,
    /// No clock on the board.
    NoClock,
    /// Not checked: no clock.
    NoClockToRead,
    /// The clock has not reported its times yet.
    NoClockReading,
    /// Not checked: no time control is configured.
    NoTimeControl,
    /// Not checked: the configured time control's starting time cannot be read.
    TimeControlUnreadable {
        /// The time control as configured.
        time_control: String,
    },
    /// Both faces show the starting time and the clock is stopped.
    ClockSet {
        /// The left face, milliseconds.
        left_ms: u32,
        /// The right face, milliseconds.
        right_ms: u32,
    },
    /// A face does not show the time control's starting time.
    ClockTimesWrong {
        /// The starting time, milliseconds.
        expected_ms: u32,
        /// The left face, milliseconds.
        left_ms: u32,
        /// The right face, milliseconds.
        right_ms: u32,
    },
    /// The clock is running.
    ClockRunning {
        /// The left face, milliseconds.
        left_ms: u32,
        /// The right face, milliseconds.
        right_ms: u32,
    },
    /// Both players are assigned.
    Paired {
        /// White's name.
        white: String,
        /// Black's name.
        black: String,
    },
    /// No pairing for the board in the loaded round.
    NotPaired,
    /// A pairing without one player's name.
    PlayerMissing {
        /// The side without a player.
        #[serde(serialize_with = "crate::core::vocab::ser_color")]
        color: Color,
    },
    /// The board's battery is fine.
    BatteryOk {
        /// As reported (`"87%"`).
        level: String,
    },
    /// The clock does not show its low-battery sign.
    ClockBatteryOk,
    /// The board's battery is low.
    BatteryLow {
        /// As reported.
        level: String,
    },
    /// The clock shows its low-battery sign.
    ClockBatteryLow,
}

/// `h:mm:ss` of milliseconds (whole seconds).
fn hms(ms: u32) -> String {
    crate::pgn::clk(ms)
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let turned = |r: &bool| if *r { " (board turned round)" } else { "" };
        match self {
            Finding::Connected => f.write_str("connected"),
            Finding::NotResponding => f.write_str("board connected but not answering"),
            Finding::Disconnected => f.write_str("board disconnected"),
            Finding::NeverSeen => f.write_str("board not connected"),
            Finding::BoardAway => f.write_str("not checked: board not connected"),
            Finding::StartPosition { reversed } => {
                write!(f, "every piece on its start square{}", turned(reversed))
            }
            Finding::PiecesWrong { reversed, squares } => {
                if squares.len() == 32 && squares.iter().all(|s| s.found.0 == SquareReading::Empty)
                {
                    return f.write_str("no pieces on the board");
                }
                let list: Vec<String> = squares.iter().map(ToString::to_string).collect();
                write!(f, "{}{}", list.join(", "), turned(reversed))
            }
            Finding::NotSensed => f.write_str("the board's squares are not known here"),
            Finding::ClockConnected => f.write_str("clock connected"),
            Finding::NoClock => f.write_str("no clock"),
            Finding::NoClockToRead => f.write_str("not checked: no clock"),
            Finding::NoClockReading => f.write_str("the clock has not reported its times"),
            Finding::NoTimeControl => f.write_str("no time control configured"),
            Finding::TimeControlUnreadable { time_control } => write!(
                f,
                "not checked: no starting time in the time control {time_control:?}"
            ),
            Finding::ClockSet { left_ms, right_ms } => {
                write!(f, "clock set: {} {}", hms(*left_ms), hms(*right_ms))
            }
            Finding::ClockTimesWrong {
                expected_ms,
                left_ms,
                right_ms,
            } => write!(
                f,
                "clock shows {} {}, the time control starts at {}",
                hms(*left_ms),
                hms(*right_ms),
                hms(*expected_ms)
            ),
            Finding::ClockRunning { left_ms, right_ms } => {
                write!(f, "clock running ({} {})", hms(*left_ms), hms(*right_ms))
            }
            Finding::Paired { white, black } => write!(f, "{white} – {black}"),
            Finding::NotPaired => f.write_str("no pairing for this board"),
            Finding::PlayerMissing { color } => write!(
                f,
                "no {} player in the pairing",
                crate::core::vocab::color_name(*color)
            ),
            Finding::BatteryOk { level } => write!(f, "battery {level}"),
            Finding::BatteryLow { level } => write!(f, "battery low ({level})"),
            Finding::ClockBatteryLow => f.write_str("clock battery low"),
            Finding::ClockBatteryOk => f.write_str("clock battery ok"),
        }
    }
}

/// One check of a board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Passed.
    pub ok: bool,
    /// Passed, a problem, or not checked.
    pub state: State,
    /// What was found.
    #[serde(flatten)]
    pub finding: Finding,
    /// The finding in a sentence.
    pub reason: String,
}

impl Check {
    fn new(state: State, finding: Finding) -> Check {
        Check {
            ok: state == State::Ok,
            state,
            reason: finding.to_string(),
            finding,
        }
    }

    fn ok(finding: Finding) -> Check {
        Check::new(State::Ok, finding)
    }

    fn problem(finding: Finding) -> Check {
        Check::new(State::Problem, finding)
    }

    fn unchecked(finding: Finding) -> Check {
        Check::new(State::Unchecked, finding)
    }
}

/// The checks of one board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Board connected.
    pub board: Check,
    /// Pieces on their start squares.
    pub pieces: Check,
    /// Clock connected.
    pub clock: Check,
    /// Clock at the time control's starting times, stopped.
    pub clock_time: Check,
    /// Players assigned.
    pub players: Check,
    /// Battery, where the board or its clock reports one (`null`: not reported).
    pub battery: Option<Check>,
}

impl Checks {
    fn all(&self) -> impl Iterator<Item = &Check> {
        [
            &self.board,
            &self.pieces,
            &self.clock,
            &self.clock_time,
            &self.players,
        ]
        .into_iter()
        .chain(self.battery.as_ref())
    }
}

/// One board's hall check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardCheck {
    /// Board id.
    pub board: String,
    /// Board number.
    pub number: u32,
    /// No check found a problem.
    pub ready: bool,
    /// The checks.
    pub checks: Checks,
}

impl BoardCheck {
    /// The reasons it is not ready, in check order.
    pub fn problems(&self) -> Vec<String> {
        self.checks
            .all()
            .filter(|c| c.state == State::Problem)
            .map(|c| c.reason.clone())
            .collect()
    }
}

/// The squares where `senses` differs from `start` read under `orientation`.
fn wrong_squares(
    senses: &SensedBoard,
    start: &Board,
    orientation: Orientation,
) -> Vec<WrongSquare> {
    let mut out: Vec<WrongSquare> = Square::ALL
        .into_iter()
        .filter_map(|sq| {
            let found = senses.get(orientation.index_of(sq));
            let expected = start
                .piece_at(sq)
                .map_or(SquareReading::Empty, SquareReading::Piece);
            (found != expected).then_some(WrongSquare {
                square: sq,
                expected: OnSquare(expected),
                found: OnSquare(found),
            })
        })
        .collect();
    out.sort_by_key(|w| w.square);
    out
}

fn pieces_check(senses: &SensedBoard, start: &Board) -> Check {
    let normal = wrong_squares(senses, start, Orientation::Normal);
    if normal.is_empty() {
        return Check::ok(Finding::StartPosition { reversed: false });
    }
    let turned = wrong_squares(senses, start, Orientation::Reversed);
    if turned.is_empty() {
        return Check::ok(Finding::StartPosition { reversed: true });
    }
    // The reading with fewer wrong squares says what to put right.
    let (reversed, squares) = if turned.len() < normal.len() {
        (true, turned)
    } else {
        (false, normal)
    };
    Check::problem(Finding::PiecesWrong { reversed, squares })
}

fn clock_time_check(reading: &ClockReading, expect: ClockExpect, tc: Option<&str>) -> Check {
    let (left_ms, right_ms) = (reading.left.millis, reading.right.millis);
    let (base, increment) = match expect {
        ClockExpect::NotConfigured => return Check::unchecked(Finding::NoTimeControl),
        ClockExpect::Unreadable => {
            return Check::unchecked(Finding::TimeControlUnreadable {
                time_control: tc.unwrap_or_default().to_string(),
            });
        }
        ClockExpect::Set { base, increment } => (base, increment),
    };
    let shows = |ms: u32, want: u32| ms / 1000 == want / 1000;
    let set = |ms: u32| shows(ms, base) || (increment > 0 && shows(ms, base + increment));
    if !(set(left_ms) && set(right_ms)) {
        return Check::problem(Finding::ClockTimesWrong {
            expected_ms: base,
            left_ms,
            right_ms,
        });
    }
    if reading.running && (reading.left_turn || reading.right_turn) {
        return Check::problem(Finding::ClockRunning { left_ms, right_ms });
    }
    Check::ok(Finding::ClockSet { left_ms, right_ms })
}

fn players_check(pairing: Option<&Pairing>) -> Check {
    let Some(p) = pairing else {
        return Check::problem(Finding::NotPaired);
    };
    fn name(n: &Option<String>) -> Option<&str> {
        n.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    match (name(&p.white.name), name(&p.black.name)) {
        (Some(w), Some(b)) => Check::ok(Finding::Paired {
            white: w.to_string(),
            black: b.to_string(),
        }),
        (None, None) => Check::problem(Finding::NotPaired),
        (None, _) => Check::problem(Finding::PlayerMissing {
            color: Color::White,
        }),
        (_, None) => Check::problem(Finding::PlayerMissing {
            color: Color::Black,
        }),
    }
}

/// A battery as reported: low when it says so or is a percentage below
/// [`LOW_BATTERY_PERCENT`].
fn battery_low(level: &str) -> bool {
    let l = level.trim().to_ascii_lowercase();
    l.contains("low")
        || l.split_once('%')
            .and_then(|(n, _)| n.trim().parse::<u32>().ok())
            .is_some_and(|n| n < LOW_BATTERY_PERCENT)
}

fn battery_check(battery: Option<&str>, clock: Option<&ClockReading>) -> Option<Check> {
    if let Some(level) = battery.filter(|b| battery_low(b)) {
        return Some(Check::problem(Finding::BatteryLow {
            level: level.to_string(),
        }));
    }
    if clock.is_some_and(|c| c.battery_low) {
        return Some(Check::problem(Finding::ClockBatteryLow));
    }
    match (battery, clock) {
        (Some(level), _) => Some(Check::ok(Finding::BatteryOk {
            level: level.to_string(),
        })),
        (None, Some(_)) => Some(Check::ok(Finding::ClockBatteryOk)),
        (None, None) => None,
    }
}

/// The hall check of one board.
pub fn check_board(facts: &BoardFacts<'_>, expected: &Expected) -> BoardCheck {
    let connected = matches!(facts.link, Link::Active);
    let board = match facts.link {
        Link::Active => Check::ok(Finding::Connected),
        Link::NotResponding => Check::problem(Finding::NotResponding),
        Link::Disconnected => Check::problem(Finding::Disconnected),
        Link::NeverSeen => Check::problem(Finding::NeverSeen),
    };
    let senses = facts.senses.filter(|_| connected);
    let reading = senses.and_then(|s| s.clock.as_ref());
    let pieces = match (connected, senses) {
        (false, _) => Check::unchecked(Finding::BoardAway),
        (true, None) => Check::problem(Finding::NotSensed),
        (true, Some(s)) => pieces_check(&s.board, &expected.start),
    };
    let has_clock = reading.is_some() || (facts.senses.is_none() && facts.clock_seen);
    let clock = match (connected, has_clock) {
        (false, _) => Check::unchecked(Finding::BoardAway),
        (true, true) => Check::ok(Finding::ClockConnected),
        (true, false) => Check::problem(Finding::NoClock),
    };
    let clock_time = match (connected, reading) {
        (false, _) => Check::unchecked(Finding::BoardAway),
        (true, Some(r)) => clock_time_check(r, expected.clock, expected.time_control.as_deref()),
        (true, None) if has_clock => Check::problem(Finding::NoClockReading),
        (true, None) => Check::unchecked(Finding::NoClockToRead),
    };
    let players = players_check(facts.pairing);
    let battery = battery_check(facts.battery, reading);
    let checks = Checks {
        board,
        pieces,
        clock,
        clock_time,
        players,
        battery,
    };
    let ready = checks.all().all(|c| c.state != State::Problem);
    BoardCheck {
        board: facts.id.to_string(),
        number: facts.number,
        ready,
        checks,
    }
}

/// Which boards the round's readiness is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every board paired in the loaded round, connected or not.
    Round,
    /// No round is loaded: every connected board (none of them is paired, so none is ready).
    Connected,
}

/// Something the arbiter must know about the whole check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Warning {
    /// No time control is configured: clocks are not checked against one.
    NoTimeControl,
    /// The time control's starting time cannot be read: clocks are not checked against it.
    TimeControlUnreadable {
        /// As configured.
        time_control: String,
    },
    /// No round is loaded.
    NoRound,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoTimeControl => {
                f.write_str("no time control configured: the clocks' times are not checked")
            }
            Warning::TimeControlUnreadable { time_control } => write!(
                f,
                "no starting time in the time control {time_control:?}: the clocks' times are \
                 not checked"
            ),
            Warning::NoRound => f.write_str("no round loaded: no board has its players"),
        }
    }
}

/// A warning with its sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warned {
    /// The warning.
    #[serde(flatten)]
    pub warning: Warning,
    /// In a sentence.
    pub reason: String,
}

/// A board not ready and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotReady {
    /// Board id.
    pub board: String,
    /// Board number.
    pub number: u32,
    /// The problems, in check order.
    pub reasons: Vec<String>,
}

/// The start position every board must show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartShown {
    /// Its Chess960 number (518: the standard start).
    pub chess960: u16,
    /// Its piece placement (FEN field 1).
    pub placement: String,
}

/// The hall check of a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoundCheck {
    /// The round in force.
    pub round: u32,
    /// Every board in scope is ready (and there is at least one).
    pub ready: bool,
    /// Which boards were checked.
    pub scope: Scope,
    /// Boards checked.
    pub boards_checked: usize,
    /// Boards ready among them.
    pub boards_ready: usize,
    /// The configured time control (`null`: none).
    pub time_control: Option<String>,
    /// The starting time every clock must show, milliseconds (`null`: not known).
    pub clock_start_ms: Option<u32>,
    /// The start position.
    pub start: StartShown,
    /// What the arbiter must know about the check itself.
    pub warnings: Vec<Warned>,
    /// The boards not ready, in board order, with their reasons.
    pub not_ready: Vec<NotReady>,
    /// Connected boards outside the scope (no pairing in the loaded round): not checked.
    pub unpaired: Vec<String>,
    /// Every board checked, in board order.
    pub boards: Vec<BoardCheck>,
}

/// The round's check from its boards' (`boards`, in board order, the ones in `scope`);
/// `unpaired`: connected boards outside it.
pub fn check_round(
    round: u32,
    scope: Scope,
    boards: &[BoardFacts<'_>],
    unpaired: Vec<String>,
    expected: &Expected,
) -> RoundCheck {
    let boards: Vec<BoardCheck> = boards.iter().map(|f| check_board(f, expected)).collect();
    let not_ready: Vec<NotReady> = boards
        .iter()
        .filter(|b| !b.ready)
        .map(|b| NotReady {
            board: b.board.clone(),
            number: b.number,
            reasons: b.problems(),
        })
        .collect();
    let mut warnings = Vec::new();
    match expected.clock {
        ClockExpect::NotConfigured => warnings.push(Warning::NoTimeControl),
        ClockExpect::Unreadable => warnings.push(Warning::TimeControlUnreadable {
            time_control: expected.time_control.clone().unwrap_or_default(),
        }),
        ClockExpect::Set { .. } => {}
    }
    if scope == Scope::Connected {
        warnings.push(Warning::NoRound);
    }
    let boards_ready = boards.len() - not_ready.len();
    RoundCheck {
        round,
        ready: !boards.is_empty() && not_ready.is_empty(),
        scope,
        boards_checked: boards.len(),
        boards_ready,
        time_control: expected.time_control.clone(),
        clock_start_ms: expected.clock_start_ms(),
        start: StartShown {
            chess960: expected.chess960,
            placement: expected.start.to_string(),
        },
        warnings: warnings
            .into_iter()
            .map(|w| Warned {
                reason: w.to_string(),
                warning: w,
            })
            .collect(),
        not_ready,
        unpaired,
        boards,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::ClockFace;
    use crate::round::pairing::Player;
    use serde_json::json;

    /// What a board senses with `board`'s pieces on it, read under `orientation`.
    fn senses_of(
        board: &Board,
        orientation: Orientation,
        clock: Option<ClockReading>,
    ) -> BoardSenses {
        let mut sensed = SensedBoard::default();
        for (sq, p) in board.clone() {
            sensed.set(orientation.index_of(sq), SquareReading::Piece(p));
        }
        BoardSenses {
            board: sensed,
            clock,
        }
    }

    /// A stopped clock showing `left` and `right` seconds.
    fn clock(left: u32, right: u32) -> ClockReading {
        let face = |s: u32| ClockFace {
            millis: s * 1000,
            ..Default::default()
        };
        ClockReading {
            left: face(left),
            right: face(right),
            ..Default::default()
        }
    }

    fn pairing() -> Pairing {
        let p = |n: &str| Player {
            name: Some(n.into()),
            ..Default::default()
        };
        Pairing {
            white: p("Alpha, Ann"),
            black: p("Beta, Bob"),
        }
    }

    fn facts<'a>(senses: &'a BoardSenses, pairing: &'a Pairing) -> BoardFacts<'a> {
        BoardFacts {
            id: "board-1",
            number: 1,
            link: Link::Active,
            senses: Some(senses),
            clock_seen: false,
            pairing: Some(pairing),
            battery: None,
        }
    }

    fn rapid() -> Expected {
        Expected::new(Some("5400+30"), None)
    }

    #[test]
    fn starting_times_of_time_controls() {
        let cases = [
            ("5400+30", Some(5_400_000)),
            ("300", Some(300_000)),
            ("40/5400+30:1800+30", Some(5_400_000)),
            ("15 min/game + 10 sec/move", Some(900_000)),
            (
                "90 min/40 moves + 30 min/game + 30 sec/move",
                Some(5_400_000),
            ),
            ("1 h + 30 s", Some(3_600_000)),
            ("?", None),
            ("-", None),
            ("*180", None),
            ("", None),
        ];
        for (tc, want) in cases {
            assert_eq!(base_of_time_control(tc), want, "{tc:?}");
        }
    }

    #[test]
    fn a_board_set_up_with_its_clock_set_is_ready() {
        let s = senses_of(
            &Board::default(),
            Orientation::Normal,
            Some(clock(5400, 5400)),
        );
        let p = pairing();
        let c = check_board(&facts(&s, &p), &rapid());
        assert!(c.ready, "{c:#?}");
        assert!(c.problems().is_empty());
        assert_eq!(
            c.checks.pieces.finding,
            Finding::StartPosition { reversed: false }
        );
        assert_eq!(c.checks.clock_time.reason, "clock set: 1:30:00 1:30:00");
        assert_eq!(c.checks.players.reason, "Alpha, Ann – Beta, Bob");
        assert_eq!(
            c.checks.battery.as_ref().map(|b| b.reason.as_str()),
            Some("clock battery ok"),
            "the clock's bit"
        );
        // A clock that adds the first increment before the first move is set too.
        let s = senses_of(
            &Board::default(),
            Orientation::Normal,
            Some(clock(5430, 5430)),
        );
        assert!(check_board(&facts(&s, &p), &rapid()).ready);
    }

    #[test]
    fn a_misplaced_knight_is_named_by_its_squares() {
        // Ng1 stands on f3 before the game.
        let mut board = Board::default();
        let knight = board.remove_piece_at(Square::G1).unwrap();
        board.set_piece_at(Square::F3, knight);
        let s = senses_of(&board, Orientation::Normal, Some(clock(5400, 5400)));
        let p = pairing();
        let c = check_board(&facts(&s, &p), &rapid());
        assert!(!c.ready);
        assert_eq!(c.problems(), vec!["g1 empty, f3: white knight".to_string()]);
        let v = serde_json::to_value(&c.checks.pieces).unwrap();
        assert_eq!(
            v,
            json!({
                "ok": false,
                "state": "problem",
                "code": "pieces_wrong",
                "reversed": false,
                "squares": [
                    {"square": "g1", "expected": "white knight", "found": null},
                    {"square": "f3", "expected": null, "found": "white knight"},
                ],
                "reason": "g1 empty, f3: white knight",
            })
        );
        // A bishop where the knight belongs says what was expected.
        let mut board = Board::default();
        board.set_piece_at(Square::B1, Color::White.bishop());
        let s = senses_of(&board, Orientation::Normal, Some(clock(5400, 5400)));
        let c = check_board(&facts(&s, &p), &rapid());
        assert_eq!(
            c.checks.pieces.reason,
            "b1: white bishop (white knight expected)"
        );
        // Nothing on the board at all.
        let s = senses_of(
            &Board::empty(),
            Orientation::Normal,
            Some(clock(5400, 5400)),
        );
        let c = check_board(&facts(&s, &p), &rapid());
        assert_eq!(c.checks.pieces.reason, "no pieces on the board");
    }

    #[test]
    fn a_board_turned_round_is_read_turned_round() {
        let s = senses_of(
            &Board::default(),
            Orientation::Reversed,
            Some(clock(5400, 5400)),
        );
        let p = pairing();
        let c = check_board(&facts(&s, &p), &rapid());
        assert!(c.ready, "{c:#?}");
        assert_eq!(
            c.checks.pieces.finding,
            Finding::StartPosition { reversed: true }
        );
        // Turned round with e2 empty: the square is e2 as the players see it.
        let mut board = Board::default();
        board.discard_piece_at(Square::E2);
        let s = senses_of(&board, Orientation::Reversed, Some(clock(5400, 5400)));
        let c = check_board(&facts(&s, &p), &rapid());
        assert_eq!(c.checks.pieces.reason, "e2 empty (board turned round)");
    }

    #[test]
    fn no_clock_wrong_times_and_a_running_clock_are_problems() {
        let p = pairing();
        let s = senses_of(&Board::default(), Orientation::Normal, None);
        let c = check_board(&facts(&s, &p), &rapid());
        assert!(!c.ready);
        assert_eq!(c.problems(), vec!["no clock".to_string()]);
        assert_eq!(c.checks.clock_time.state, State::Unchecked);
        assert_eq!(c.checks.battery, None, "nothing reports a battery");

        let s = senses_of(
            &Board::default(),
            Orientation::Normal,
            Some(clock(3600, 5400)),
        );
        let c = check_board(&facts(&s, &p), &rapid());
        assert_eq!(
            c.problems(),
            vec!["clock shows 1:00:00 1:30:00, the time control starts at 1:30:00".to_string()]
        );

        // Started a moment ago: the times are still the starting ones, but it runs.
        let mut running = clock(5400, 5400);
        running.running = true;
        running.right_turn = true;
        let s = senses_of(&Board::default(), Orientation::Normal, Some(running));
        let c = check_board(&facts(&s, &p), &rapid());
        assert_eq!(
            c.checks.clock_time.finding,
            Finding::ClockRunning {
                left_ms: 5_400_000,
                right_ms: 5_400_000
            }
        );
        assert_eq!(
            c.problems(),
            vec!["clock running (1:30:00 1:30:00)".to_string()]
        );
        assert!(!c.ready);
    }

    #[test]
    fn without_a_time_control_the_clock_times_are_unchecked_and_said_so() {
        let p = pairing();
        let s = senses_of(&Board::default(), Orientation::Normal, Some(clock(1, 2)));
        let none = Expected::new(None, None);
        let c = check_board(&facts(&s, &p), &none);
        assert!(c.ready, "an unchecked clock holds nothing back");
        assert_eq!(c.checks.clock_time.state, State::Unchecked);
        assert_eq!(c.checks.clock_time.reason, "no time control configured");
        let r = check_round(1, Scope::Round, &[facts(&s, &p)], vec![], &none);
        assert!(r.ready);
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].warning, Warning::NoTimeControl);
        // A time control with no starting time in it: unchecked too, with its text.
        let odd = Expected::new(Some("?"), None);
        let c = check_board(&facts(&s, &p), &odd);
        assert_eq!(c.checks.clock_time.state, State::Unchecked);
        assert!(c.checks.clock_time.reason.contains("\"?\""));
    }

    #[test]
    fn players_battery_and_link() {
        let s = senses_of(
            &Board::default(),
            Orientation::Normal,
            Some(clock(5400, 5400)),
        );
        let p = pairing();
        let mut f = facts(&s, &p);
        f.pairing = None;
        assert_eq!(
            check_board(&f, &rapid()).problems(),
            vec!["no pairing for this board".to_string()]
        );
        let mut half = pairing();
        half.black.name = None;
        f.pairing = Some(&half);
        assert_eq!(
            check_board(&f, &rapid()).problems(),
            vec!["no black player in the pairing".to_string()]
        );
        let mut f = facts(&s, &p);
        f.battery = Some("15%");
        assert_eq!(
            check_board(&f, &rapid()).problems(),
            vec!["battery low (15%)".to_string()]
        );
        f.battery = Some("12%, charging");
        assert_eq!(
            check_board(&f, &rapid()).problems(),
            vec!["battery low (12%, charging)".to_string()]
        );
        f.battery = Some("87%");
        assert!(check_board(&f, &rapid()).ready);
        let mut low = clock(5400, 5400);
        low.battery_low = true;
        let s2 = senses_of(&Board::default(), Orientation::Normal, Some(low));
        assert_eq!(
            check_board(&facts(&s2, &p), &rapid()).problems(),
            vec!["clock battery low".to_string()]
        );
        let mut f = facts(&s, &p);
        f.link = Link::NeverSeen;
        let c = check_board(&f, &rapid());
        assert_eq!(c.problems(), vec!["board not connected".to_string()]);
        assert_eq!(c.checks.pieces.state, State::Unchecked);
        assert!(!c.ready);
        // No sensed board here: never called ready unseen.
        let mut f = facts(&s, &p);
        f.senses = None;
        f.clock_seen = true;
        let c = check_board(&f, &rapid());
        assert!(!c.ready);
        assert_eq!(c.checks.pieces.finding, Finding::NotSensed);
        assert!(c.checks.clock.ok);
    }

    #[test]
    fn chess960_expects_the_announced_position() {
        // Position 0: BBQNNRKR.
        let board = start::board_of(0);
        assert_eq!(
            board.to_string(),
            "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR"
        );
        let s = senses_of(&board, Orientation::Normal, Some(clock(5400, 5400)));
        let p = pairing();
        assert!(check_board(&facts(&s, &p), &Expected::new(Some("5400+30"), Some(0))).ready);
        let standard = check_board(&facts(&s, &p), &rapid());
        assert!(!standard.ready);
        assert!(
            standard
                .checks
                .pieces
                .reason
                .starts_with("a1: white bishop (white rook expected)")
        );
    }

    #[test]
    fn the_round_is_ready_only_when_every_board_is() {
        let p = pairing();
        let good = senses_of(
            &Board::default(),
            Orientation::Normal,
            Some(clock(5400, 5400)),
        );
        let no_clock = senses_of(&Board::default(), Orientation::Normal, None);
        let mut two = facts(&no_clock, &p);
        two.id = "board-2";
        two.number = 2;
        let r = check_round(
            3,
            Scope::Round,
            &[facts(&good, &p), two],
            vec!["dgt-9".into()],
            &rapid(),
        );
        assert!(!r.ready);
        assert_eq!((r.boards_checked, r.boards_ready), (2, 1));
        assert_eq!(
            r.not_ready,
            vec![NotReady {
                board: "board-2".into(),
                number: 2,
                reasons: vec!["no clock".into()]
            }]
        );
        assert_eq!(r.unpaired, vec!["dgt-9".to_string()]);
        assert_eq!(r.clock_start_ms, Some(5_400_000));
        assert_eq!(r.start.chess960, 518);
        let r = check_round(3, Scope::Round, &[facts(&good, &p)], vec![], &rapid());
        assert!(r.ready && r.warnings.is_empty());
        let r = check_round(3, Scope::Round, &[], vec![], &rapid());
        assert!(!r.ready, "no board is not a ready round");
        let r = check_round(3, Scope::Connected, &[], vec![], &rapid());
        assert_eq!(r.warnings[0].warning, Warning::NoRound);
    }
}
