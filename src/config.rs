//! The daemon's configuration file (TOML): only what the sensors cannot know (`docs/README.md`, design rule 7).
//!
//! Every section and key is optional; command-line flags override the file, so a board can be
//! served with no file at all (`eboardd run --port /dev/ttyACM0`). Unknown keys are errors, so a
//! typo is caught at start (or at reload, which then keeps the configuration in force). See
//! `eboardd.example.toml` for every key with its meaning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::observation::ClockSide;

/// Why a configuration could not be used. Displays as one line naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or ill-typed keys.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (with line and column), on one line.
        message: String,
    },
    /// The values do not make sense together.
    #[error("{path}: {message}")]
    Invalid {
        /// The file (or `command line`).
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The event being played: PGN tags for every game.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventConfig {
    /// PGN `Event`.
    pub name: Option<String>,
    /// PGN `Site`.
    pub site: Option<String>,
    /// PGN `Round` (e.g. `"3"`); a board's number is appended (`"3.12"`).
    pub round: Option<String>,
}

/// Daemon settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// Where captures go: `DIR/YYYY-MM-DD/<board>.jsonl`.
    pub capture_dir: Option<PathBuf>,
    /// Serial ports to serve besides the discovered ones (e.g. `/dev/eboard-12345`). They are
    /// retried until they appear.
    pub ports: Vec<PathBuf>,
    /// Find DGT boards on USB (045b:8111 at once; 0403:6001 after a protocol probe).
    pub discovery: bool,
    /// Sync captures to disk before the events they cause are broadcast (survives a power cut).
    pub fsync: bool,
    /// Seconds of silence on a link before a keep-alive request; a link silent for twice this
    /// is dead and reopened.
    pub keepalive_secs: u64,
    /// Seconds without field updates after which a board dump is asked for (and the update
    /// mode set again): repairs a lost field update, wakes a board that reset.
    pub dump_quiet_secs: u64,
    /// Seconds a board with a game in progress must have been away (or the daemon restarted)
    /// before its own memory is read back, when its family keeps one (a single DGT board's
    /// takes about 8 s at 9600 baud): the moves made meanwhile are recovered from it exactly. A
    /// shorter absence leaves a few plies at most, recovered from the board dump.
    pub memory_after_secs: u64,
    /// Bluetooth LE boards one adapter is given at most (adapters hold 3 to 8 links; health
    /// shows each adapter's boards against this).
    pub ble_boards_per_adapter: usize,
    /// Seconds before a lost Bluetooth LE board is connected again (a Chessnut GO reconnected
    /// after 2 s never streamed again; 8 s worked).
    pub ble_reconnect_secs: u64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            capture_dir: None,
            ports: Vec::new(),
            discovery: true,
            fsync: true,
            keepalive_secs: 5,
            dump_quiet_secs: 20,
            memory_after_secs: 10,
            ble_boards_per_adapter: 6,
            ble_reconnect_secs: 8,
        }
    }
}

pub use crate::session::clock_text::ClockConfig;

/// One board of the event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoardConfig {
    /// Board number in the event (its device id becomes `board-<number>`).
    pub number: u32,
    /// The board's serial number as it reports it (5 digits on DGT boards).
    pub serial: String,
    /// White player's name (PGN `White`).
    pub white: Option<String>,
    /// Black player's name (PGN `Black`).
    pub black: Option<String>,
    /// The clock side White uses, when fixed (else learned from which face counts down).
    pub white_clock: Option<ClockSide>,
}

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The event.
    #[serde(default)]
    pub event: EventConfig,
    /// Daemon settings.
    #[serde(default)]
    pub daemon: DaemonConfig,
    /// Clock texts.
    #[serde(default)]
    pub clock: ClockConfig,
    /// Boards by serial number.
    #[serde(default, rename = "board")]
    pub boards: Vec<BoardConfig>,
    /// Settings of the outputs (broadcast layer); command-line flags override them.
    #[serde(default)]
    pub outputs: OutputsConfig,
}

/// `[outputs]`: where the broadcast goes. Every key is optional; a flag of `eboardd run` with
/// the same name overrides it. Read at start (a reload keeps the outputs that started).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsConfig {
    /// HTTP API, event streams, relay files and arbiter page: `ADDR:PORT` or `"off"`
    /// (default `127.0.0.1:8080`).
    pub http: Option<String>,
    /// LiveChess-compatible EBoards API, e.g. `127.0.0.1:1982` (off unless given).
    pub livechess: Option<String>,
    /// MQTT broker, `mqtt://HOST:PORT`, or a list of them: the nodes of a broker cluster,
    /// tried in turn.
    pub mqtt: Option<OneOrMany>,
    /// This daemon's name in MQTT topics (default: the host name).
    pub mqtt_node: Option<String>,
    /// First level of MQTT topics (default `eboardd`).
    pub mqtt_prefix: Option<String>,
    /// Relay files (games.pgn, LiveChessCloud JSON) go into this directory.
    pub relay_dir: Option<PathBuf>,
    /// File holding the access token that state-changing requests must carry.
    pub token_file: Option<PathBuf>,
    /// Web origins whose pages may open the event streams besides the server's own.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Restrict the LiveChess API to pages of these origins (default: any).
    #[serde(default)]
    pub livechess_allowed_origins: Vec<String>,
    /// Broadcast delay in seconds: every public output (relay files, LiveChess, MQTT, HTTP
    /// without the token) shows the round as it stood this long ago (default 0: live).
    pub delay_secs: Option<u64>,
    /// `[outputs.lichess]`: push the round to a lichess broadcast.
    pub lichess: Option<crate::output::lichess::LichessFile>,
}

pub use crate::output::OneOrMany;

/// The longest broadcast delay accepted (3 hours).
pub const MAX_DELAY_SECS: u64 = 3 * 3600;

/// Command-line settings that override the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Ports to serve, added to the file's.
    pub ports: Vec<PathBuf>,
    /// Capture directory, replacing the file's.
    pub capture_dir: Option<PathBuf>,
    /// Turn USB discovery off.
    pub no_discovery: bool,
    /// Turn fsync off (tests, benchmarks).
    pub no_fsync: bool,
}

impl Config {
    /// Parses and validates TOML text; `name` is used in messages.
    pub fn parse(name: &str, text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: name.to_string(),
            message: e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        })?;
        if let Err(e) = cfg.check_boards() {
            let path = match board_line(text, e.index, e.key) {
                Some(n) => format!("{name}: line {n}"),
                None => name.to_string(),
            };
            return Err(ConfigError::Invalid {
                path,
                message: e.message,
            });
        }
        cfg.validate(name).map_err(|e| with_line(e, text))?;
        Ok(cfg)
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: name.clone(),
            source,
        })?;
        Config::parse(&name, &text)
    }

    /// The file (or defaults when `path` is `None`) with the command line's overrides applied,
    /// validated.
    pub fn load_with(path: Option<&Path>, o: &Overrides) -> Result<Config, ConfigError> {
        let mut cfg = match path {
            Some(p) => Config::load(p)?,
            None => Config::default(),
        };
        for p in &o.ports {
            if !cfg.daemon.ports.contains(p) {
                cfg.daemon.ports.push(p.clone());
            }
        }
        if let Some(d) = &o.capture_dir {
            cfg.daemon.capture_dir = Some(d.clone());
        }
        if o.no_discovery {
            cfg.daemon.discovery = false;
        }
        if o.no_fsync {
            cfg.daemon.fsync = false;
        }
        cfg.validate("command line")?;
        Ok(cfg)
    }

    /// The `[[board]]` tables' own checks: numbers from 1 to [`MAX_BOARD_NUMBER`], each
    /// number and serial given once.
    fn check_boards(&self) -> Result<(), BoardError> {
        let mut numbers = BTreeMap::new();
        let mut serials = BTreeMap::new();
        for (i, b) in self.boards.iter().enumerate() {
            let at = |key, message| BoardError {
                index: i,
                key,
                message,
            };
            if !(1..=MAX_BOARD_NUMBER).contains(&b.number) {
                return Err(at(
                    "number",
                    format!("board number {}: must be 1 to {MAX_BOARD_NUMBER}", b.number),
                ));
            }
            if let Some(first) = numbers.insert(b.number, i) {
                return Err(at(
                    "number",
                    format!(
                        "board number {} is given twice (the first at board {} of the file)",
                        b.number,
                        first + 1
                    ),
                ));
            }
            let s = b.serial.trim();
            let serial_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            if s.is_empty() || s.len() > 24 || !s.chars().all(serial_char) {
                return Err(at(
                    "serial",
                    format!(
                        "board {}: serial {:?} must be 1 to 24 letters, digits, '-' or '_' (DGT \
                         boards report 5 digits; boards without one are named after their port: \
                         port-ttyUSB0)",
                        b.number, b.serial
                    ),
                ));
            }
            if serials.insert(s.to_string(), i).is_some() {
                return Err(at("serial", format!("serial {s:?} is given to two boards")));
            }
        }
        Ok(())
    }

    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let checks = [
            self.check_texts(),
            self.check_outputs(),
            self.check_event_round(),
            self.check_boards().map_err(|e| e.message),
            self.check_ranges(),
            self.check_ports(),
            self.check_capture_dir(),
        ];
        checks
            .into_iter()
            .collect::<Result<(), String>>()
            .map_err(|message| ConfigError::Invalid {
                path: name.to_string(),
                message,
            })
    }

    /// The PGN texts (event, site, round, players): short, without control characters.
    fn check_texts(&self) -> Result<(), String> {
        let texts = [
            ("event.name", &self.event.name),
            ("event.site", &self.event.site),
            ("event.round", &self.event.round),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(self.boards.iter().flat_map(|b| {
            [
                (format!("board {}: white", b.number), &b.white),
                (format!("board {}: black", b.number), &b.black),
            ]
        }));
        for (key, value) in texts {
            if let Some(v) = value
                && (v.chars().any(crate::pgn::unsafe_char) || v.chars().count() > 200)
            {
                return Err(format!(
                    "{key} = {}: at most 200 characters, without control characters (line \
                     breaks, tabs) or direction overrides",
                    crate::capture::printable(v, 60)
                ));
            }
        }
        Ok(())
    }

    /// `[outputs]`: origins, listen addresses, MQTT brokers and names, the delay.
    fn check_outputs(&self) -> Result<(), String> {
        for o in self
            .outputs
            .allowed_origins
            .iter()
            .chain(&self.outputs.livechess_allowed_origins)
        {
            if !crate::output::ws::valid_origin(o) {
                return Err(format!(
                    "outputs: {} is not a web origin like \"https://broadcast.example.org\"",
                    crate::capture::printable(o, 60)
                ));
            }
        }
        let o = &self.outputs;
        for (key, value) in [("http", &o.http), ("livechess", &o.livechess)] {
            if let Some(v) = value
                && !v.eq_ignore_ascii_case("off")
                && v.parse::<std::net::SocketAddr>().is_err()
                && v.strip_prefix("localhost:")
                    .is_none_or(|p| p.parse::<u16>().is_err())
            {
                return Err(format!(
                    "outputs.{key} = {}: not an address like 127.0.0.1:8080 (or \"off\")",
                    crate::capture::printable(v, 60)
                ));
            }
        }
        if let Some(urls) = &o.mqtt
            && let Err(e) = crate::output::MqttConfig::from_urls(&urls.to_vec())
        {
            return Err(format!("outputs.mqtt: {e}"));
        }
        for (key, value) in [("mqtt_node", &o.mqtt_node), ("mqtt_prefix", &o.mqtt_prefix)] {
            if let Some(v) = value
                && (v.is_empty()
                    || v.len() > 64
                    || !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
            {
                return Err(format!(
                    "outputs.{key} = {}: 1 to 64 letters, digits, '-', '_' or '.'",
                    crate::capture::printable(v, 60)
                ));
            }
        }
        if let Some(d) = o.delay_secs
            && d > MAX_DELAY_SECS
        {
            return Err(format!(
                "outputs.delay_secs = {d}: at most {MAX_DELAY_SECS} (3 hours)"
            ));
        }
        Ok(())
    }

    /// `event.round`: 1 to 999 when it is a number.
    fn check_event_round(&self) -> Result<(), String> {
        if let Some(r) = &self.event.round
            && r.trim()
                .parse::<u32>()
                .is_ok_and(|n| !(1..=999).contains(&n))
        {
            return Err(format!("event.round = {r:?}: must be 1 to 999"));
        }
        Ok(())
    }

    /// The numbers of `[clock]` and `[daemon]` within their ranges.
    fn check_ranges(&self) -> Result<(), String> {
        if !(1..=60).contains(&self.clock.text_secs) {
            return Err(format!(
                "clock.text_secs = {}: must be 1 to 60",
                self.clock.text_secs
            ));
        }
        if !(1..=600).contains(&self.daemon.keepalive_secs) {
            return Err(format!(
                "daemon.keepalive_secs = {}: must be 1 to 600",
                self.daemon.keepalive_secs
            ));
        }
        if !(1..=600).contains(&self.daemon.dump_quiet_secs) {
            return Err(format!(
                "daemon.dump_quiet_secs = {}: must be 1 to 600",
                self.daemon.dump_quiet_secs
            ));
        }
        if !(1..=32).contains(&self.daemon.ble_boards_per_adapter) {
            return Err(format!(
                "daemon.ble_boards_per_adapter = {}: must be 1 to 32",
                self.daemon.ble_boards_per_adapter
            ));
        }
        if self.daemon.memory_after_secs > 86_400 {
            return Err(format!(
                "daemon.memory_after_secs = {}: must be 0 to 86400",
                self.daemon.memory_after_secs
            ));
        }
        Ok(())
    }

    /// `daemon.capture_dir`, when given, is not empty.
    fn check_capture_dir(&self) -> Result<(), String> {
        if let Some(d) = &self.daemon.capture_dir
            && d.as_os_str().is_empty()
        {
            return Err("daemon.capture_dir is empty".into());
        }
        Ok(())
    }

    /// `daemon.ports`: each names a family this build has and a path it can serve (a
    /// Bluetooth LE target only for a Bluetooth LE family).
    fn check_ports(&self) -> Result<(), String> {
        for p in &self.daemon.ports {
            if p.as_os_str().is_empty() {
                return Err("daemon.ports has an empty path".into());
            }
            if let Err(e) = port_prefix(p) {
                return Err(format!("daemon.ports: {e}"));
            }
            match crate::family::parse_port(p) {
                Err(e) => return Err(format!("daemon.ports: {e}")),
                Ok((d, path)) => {
                    if path.as_os_str().is_empty() {
                        return Err(format!(
                            "daemon.ports: {:?}: no path after the family (e.g. \
                             \"{}:/dev/ttyUSB0\")",
                            p.display().to_string(),
                            d.name()
                        ));
                    }
                    let ble = crate::driver::ble_target::BleTarget::is_ble(&path);
                    if d.transport().gatt().is_some() {
                        if let Err(e) = crate::driver::ble_target::BleTarget::parse(&path) {
                            return Err(format!("daemon.ports: {e}"));
                        }
                    } else if ble {
                        return Err(format!(
                            "daemon.ports: {}: the {} family is served on serial ports, not Bluetooth LE",
                            p.display(),
                            d.name()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The capture directory: configured, else `$STATE_DIRECTORY/captures` (systemd's
    /// `StateDirectory=`), else `./captures`.
    pub fn capture_dir(&self) -> PathBuf {
        if let Some(d) = &self.daemon.capture_dir {
            return d.clone();
        }
        match std::env::var_os("STATE_DIRECTORY") {
            // systemd may list several directories separated by colons: take the first.
            Some(s) if !s.is_empty() => {
                let s = s.to_string_lossy().to_string();
                PathBuf::from(s.split(':').next().unwrap_or(&s)).join("captures")
            }
            _ => PathBuf::from("captures"),
        }
    }

    /// Web origins allowed, besides the server's own, to open the event-stream WebSocket
    /// (`[outputs] allowed_origins`).
    pub fn allowed_origins(&self) -> Vec<String> {
        self.outputs.allowed_origins.clone()
    }

    /// The configured board with this serial number.
    pub fn board_by_serial(&self, serial: &str) -> Option<&BoardConfig> {
        let serial = serial.trim();
        // DGT serials are digits: "01025" and "1025" are the same board.
        let digits = |s: &str| s.trim_start_matches('0').to_string();
        self.boards
            .iter()
            .find(|b| b.serial.trim() == serial)
            .or_else(|| {
                self.boards
                    .iter()
                    .find(|b| digits(b.serial.trim()) == digits(serial))
            })
    }

    /// The device id of a DGT board: `board-<number>` when configured, else `dgt-<serial>`.
    pub fn board_id(&self, serial: &str) -> String {
        self.board_id_of(crate::family::DEFAULT_FAMILY, serial)
    }

    /// The device id of a board of `driver`: `board-<number>` when configured, else
    /// `<driver>-<serial>`.
    pub fn board_id_of(&self, driver: &str, serial: &str) -> String {
        match self.board_by_serial(serial) {
            Some(b) => format!("board-{}", b.number),
            None => format!("{driver}-{}", sanitize(serial)),
        }
    }
}

/// A port's `name:` prefix that [`crate::family::parse_port`] would take for a path (a family
/// name in the wrong case, `DGT:/dev/ttyACM0`, or a word that names no family): refused, with
/// the families this build has. A path with a `/` before its first `:` is a path.
fn port_prefix(p: &Path) -> Result<(), String> {
    let text = p.to_string_lossy();
    let Some((name, _)) = text.split_once(':') else {
        return Ok(());
    };
    let word = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !word || crate::family::driver(name).is_some() {
        return Ok(());
    }
    let hint = match crate::family::driver(&name.to_ascii_lowercase()) {
        Some(d) => format!(" (family names are lower case: {}:…)", d.name()),
        None => String::new(),
    };
    Err(format!(
        "{text:?}: unknown board family {name:?}{hint} (families: {})",
        crate::family::family_names()
    ))
}

/// The highest board number (four digits, as LiveChess's game ids have).
pub const MAX_BOARD_NUMBER: u32 = 9999;

/// What is wrong with the `index`-th `[[board]]` table, at its `key`.
struct BoardError {
    index: usize,
    key: &'static str,
    message: String,
}

/// The line of `key` in the `index`-th `[[board]]` table of `text` (else of the table's
/// header), 1-based.
fn board_line(text: &str, index: usize, key: &str) -> Option<usize> {
    let mut seen = 0;
    let mut in_it = false;
    let mut header = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            in_it = false;
            if l.replace(' ', "").starts_with("[[board]]") {
                in_it = seen == index;
                seen += 1;
                if in_it {
                    header = Some(i + 1);
                }
            }
            continue;
        }
        if in_it && l.split('=').next().is_some_and(|k| k.trim() == key) {
            return Some(i + 1);
        }
    }
    header
}

/// An `Invalid` error whose message starts with `section.key` (or `section:`) gets the line of
/// that key (or section) in `text`, as the parser's own errors have.
fn with_line(e: ConfigError, text: &str) -> ConfigError {
    let ConfigError::Invalid { path, message } = e else {
        return e;
    };
    let head: String = message
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    let (section, key) = head.split_once('.').unwrap_or((head.as_str(), ""));
    // Tables that appear once; `[[board]]` messages name the board instead.
    if !matches!(section, "event" | "daemon" | "clock" | "outputs") {
        return ConfigError::Invalid { path, message };
    }
    let mut in_section = false;
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            in_section = l.trim_matches(|c| c == '[' || c == ']').trim() == section;
            if in_section && key.is_empty() {
                found = Some(i + 1);
            }
            continue;
        }
        let k = l.split('=').next().unwrap_or("").trim();
        if in_section && !key.is_empty() && k == key {
            found = Some(i + 1);
            break;
        }
    }
    match found {
        Some(n) => ConfigError::Invalid {
            path: format!("{path}: line {n}"),
            message,
        },
        _ => ConfigError::Invalid { path, message },
    }
}

/// `s` with anything but letters, digits, `-` and `_` replaced by `_` (safe in file names).
pub fn sanitize(s: &str) -> String {
    let out: String = s
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("eboardd.example.toml");
        let cfg = Config::load(&path).unwrap();
        assert!(!cfg.boards.is_empty());
        assert_eq!(cfg.board_id(&cfg.boards[0].serial), "board-1");
    }

    #[test]
    fn empty_is_default() {
        let cfg = Config::parse("x.toml", "").unwrap();
        assert_eq!(cfg, Config::default());
        assert!(cfg.daemon.discovery && cfg.daemon.fsync);
        assert_eq!(cfg.board_id("01234"), "dgt-01234");
    }

    #[test]
    fn boards_and_overrides() {
        let text = r#"
            [event]
            name = "Open"
            round = "3"
            [daemon]
            ports = ["/dev/eboard-12345"]
            [[board]]
            number = 7
            serial = "12345"
            white = "A"
            white_clock = "right"
        "#;
        let cfg = Config::parse("c.toml", text).unwrap();
        assert_eq!(cfg.boards[0].white_clock, Some(ClockSide::Right));
        assert_eq!(cfg.board_id("12345"), "board-7");
        let dir = std::env::temp_dir().join(format!("eboardd-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(&file, text).unwrap();
        let o = Overrides {
            ports: vec!["/dev/ttyACM0".into(), "/dev/eboard-12345".into()],
            capture_dir: Some("/tmp/c".into()),
            no_discovery: true,
            no_fsync: false,
        };
        let merged = Config::load_with(Some(&file), &o).unwrap();
        assert_eq!(merged.daemon.ports.len(), 2);
        assert_eq!(merged.capture_dir(), Path::new("/tmp/c"));
        assert!(!merged.daemon.discovery);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_that_would_forge_pgn_tags_are_refused() {
        for text in [
            "[event]\nname = \"Open\\n[Result \\\"1-0\\\"]\"\n",
            "[[board]]\nnumber = 1\nserial = \"12345\"\nwhite = \"A\\u202Eb\"\n",
            "[[board]]\nnumber = 1\nserial = \"12345\"\nblack = \"A\\tb\"\n",
        ] {
            let e = Config::parse("t.toml", text).unwrap_err().to_string();
            assert!(e.contains("control characters"), "{text}: {e}");
            assert!(!e.contains('\n'), "{e:?}");
        }
        let ok = Config::parse("t.toml", "[event]\nname = \"Tata Steel\"\n").unwrap();
        assert_eq!(ok.event.name.as_deref(), Some("Tata Steel"));
    }

    #[test]
    fn allowed_origins_are_read_and_checked() {
        let cfg = Config::parse(
            "t.toml",
            "[outputs]\nallowed_origins = [\"https://broadcast.example.org\"]\n",
        )
        .unwrap();
        assert_eq!(cfg.allowed_origins(), ["https://broadcast.example.org"]);
        let e = Config::parse("t.toml", "[outputs]\nallowed_origins = [\"evil\"]\n").unwrap_err();
        assert!(e.to_string().contains("web origin"), "{e}");
    }

    #[test]
    fn mqtt_takes_one_broker_or_the_nodes_of_a_cluster() {
        let one = Config::parse("t.toml", "[outputs]\nmqtt = \"mqtt://10.0.0.5:1883\"\n").unwrap();
        assert_eq!(
            one.outputs.mqtt.map(|m| m.to_vec()),
            Some(vec!["mqtt://10.0.0.5:1883".to_string()])
        );
        let many = Config::parse(
            "t.toml",
            "[outputs]\nmqtt = [\"mqtt://10.0.0.5:1883\", \"mqtt://10.0.0.6\"]\n",
        )
        .unwrap();
        let urls = many.outputs.mqtt.unwrap().to_vec();
        let brokers = crate::output::MqttConfig::from_urls(&urls).unwrap().brokers;
        assert_eq!(
            brokers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["10.0.0.5:1883", "10.0.0.6:1883"]
        );
        let e = |t: &str| Config::parse("c.toml", t).unwrap_err().to_string();
        let bad = e("[outputs]\nmqtt = [\"mqtt://10.0.0.5:1883\", \"http://10.0.0.6\"]\n");
        assert!(bad.starts_with("c.toml: line 2: outputs.mqtt"), "{bad}");
        assert!(
            bad.contains("http://10.0.0.6") && !bad.contains('\n'),
            "{bad}"
        );
        let empty = e("[outputs]\nmqtt = []\n");
        assert!(
            empty.contains("outputs.mqtt") && empty.contains("empty"),
            "{empty}"
        );
    }

    #[test]
    fn outputs_are_typed_and_bad_values_name_file_and_line() {
        let cfg = Config::parse(
            "t.toml",
            "[outputs]\nhttp = \"127.0.0.1:9090\"\nrelay_dir = \"/srv/relay\"\n\
             mqtt = \"mqtt://127.0.0.1:1883\"\nmqtt_node = \"hall-2\"\n",
        )
        .unwrap();
        assert_eq!(cfg.outputs.http.as_deref(), Some("127.0.0.1:9090"));
        assert_eq!(cfg.outputs.relay_dir, Some(PathBuf::from("/srv/relay")));
        let e = |t: &str| Config::parse("c.toml", t).unwrap_err().to_string();
        let unknown = e("[outputs]\nhtp = \"127.0.0.1:1\"\n");
        assert!(
            unknown.contains("htp") && unknown.contains("line 2"),
            "{unknown}"
        );
        let addr = e("[event]\nname = \"x\"\n\n[outputs]\nrelay_dir = \"r\"\nhttp = \"nowhere\"\n");
        assert!(addr.starts_with("c.toml: line 6: outputs.http"), "{addr}");
        let mqtt = e("[outputs]\nmqtt = \"http://x\"\n");
        assert!(mqtt.starts_with("c.toml: line 2: outputs.mqtt"), "{mqtt}");
        let round = e("[event]\nround = \"0\"\n");
        assert!(round.starts_with("c.toml: line 2: event.round"), "{round}");
    }

    #[test]
    fn errors_are_clear() {
        let e = |t: &str| Config::parse("c.toml", t).unwrap_err().to_string();
        let unknown = e("[daemon]\ncapture_dri = \"x\"\n");
        assert!(unknown.starts_with("c.toml: "), "{unknown}");
        assert!(unknown.contains("capture_dri"), "{unknown}");
        assert!(unknown.contains("line 2"), "{unknown}");
        assert!(!unknown.contains('\n'));
        let twice =
            e("[[board]]\nnumber = 1\nserial = \"1\"\n[[board]]\nnumber = 1\nserial = \"2\"\n");
        assert_eq!(
            twice,
            "c.toml: line 5: board number 1 is given twice (the first at board 1 of the file)"
        );
        let zero = e("[event]\nround = \"1\"\n[[board]]\nserial = \"1\"\nnumber = 0\n");
        assert_eq!(zero, "c.toml: line 5: board number 0: must be 1 to 9999");
        let negative = e("[[board]]\nnumber = -3\nserial = \"1\"\n");
        assert!(negative.starts_with("c.toml: "), "{negative}");
        assert!(negative.contains("line 2"), "{negative}");
        let text = e("[[board]]\nnumber = \"7\"\nserial = \"1\"\n");
        assert!(text.contains("line 2"), "{text}");
        let big = e("[[board]]\nserial = \"1\"\nnumber = 10000\n");
        assert_eq!(big, "c.toml: line 3: board number 10000: must be 1 to 9999");
        let side = e("[[board]]\nnumber = 1\nserial = \"1\"\nwhite_clock = \"up\"\n");
        assert!(
            side.contains("white_clock") || side.contains("up"),
            "{side}"
        );
        let serial = e("[[board]]\nnumber = 2\nserial = \"12 45\"\n");
        assert!(serial.contains("serial \"12 45\""), "{serial}");
        let secs = e("[clock]\ntext_secs = 0\n");
        assert_eq!(secs, "c.toml: line 2: clock.text_secs = 0: must be 1 to 60");
        let missing = Config::load(Path::new("/nonexistent/eboardd.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.starts_with("/nonexistent/eboardd.toml: "),
            "{missing}"
        );
    }

    #[test]
    fn ports_with_a_bad_family_prefix_or_no_path_are_refused_at_load() {
        let e = |port: &str| {
            Config::parse("c.toml", &format!("[daemon]\nports = [{port:?}]\n"))
                .unwrap_err()
                .to_string()
        };
        let upper = e("DGT:/dev/x");
        assert!(
            upper.starts_with("c.toml: line 2: daemon.ports")
                && upper.contains("unknown board family \"DGT\"")
                && upper.contains("lower case: dgt:"),
            "{upper}"
        );
        let mixed = e("Millennium:/dev/ttyUSB0");
        assert!(mixed.contains("millennium:"), "{mixed}");
        let unknown = e("Foo:/dev/x");
        assert!(
            unknown.contains("unknown board family \"Foo\""),
            "{unknown}"
        );
        let empty = e("certabo:");
        assert!(
            empty.contains("no path after the family") && empty.contains("certabo:/dev/ttyUSB0"),
            "{empty}"
        );
        for good in [
            "/dev/ttyACM0",
            "dgt:/dev/ttyACM0",
            "certabo:/dev/ttyUSB1",
            "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0",
            "relative/pci-0000:00:14.0",
        ] {
            Config::parse("c.toml", &format!("[daemon]\nports = [{good:?}]\n"))
                .unwrap_or_else(|e| panic!("{good}: {e}"));
        }
    }

    #[test]
    fn serials_match_with_or_without_leading_zeros() {
        let cfg = Config::parse("c", "[[board]]\nnumber = 3\nserial = \"01025\"\n").unwrap();
        assert_eq!(cfg.board_id("01025"), "board-3");
        assert_eq!(cfg.board_id("1025"), "board-3");
        assert_eq!(cfg.board_id("9/9"), "dgt-9_9");
        assert_eq!(cfg.board_id_of("millennium", "port-5"), "millennium-port-5");
    }
}
