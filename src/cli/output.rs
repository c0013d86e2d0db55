//! Command-line options of the outputs (shared by `eboardd serve-replay` and the live daemon)
//! and the `serve-replay` command.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::output::{Hub, HubConfig, MqttConfig, OutputConfig, RoundInfo};

/// A command-line value the outputs cannot use: the reason, for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgError {
    /// A flag's value is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The MQTT address is not valid.
    #[error(transparent)]
    Mqtt(#[from] crate::output::mqtt::MqttUrlError),
}

impl From<String> for ArgError {
    fn from(reason: String) -> Self {
        ArgError::Invalid(reason)
    }
}

impl From<&str> for ArgError {
    fn from(reason: &str) -> Self {
        ArgError::Invalid(reason.to_string())
    }
}

/// Where the outputs go, and what the round is called.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// HTTP API, event streams, relay files and arbiter page: ADDR:PORT, or "off" [default:
    /// 127.0.0.1:8080, or [outputs] http of the configuration].
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// LiveChess-compatible EBoards API, e.g. 127.0.0.1:1982 (off unless given).
    #[arg(long, value_name = "ADDR")]
    pub livechess: Option<String>,
    /// Publish to an MQTT broker: mqtt://HOST:PORT; repeat for the nodes of a broker cluster
    /// (tried in turn, the next one when a connection breaks).
    #[arg(long, value_name = "URL")]
    pub mqtt: Vec<String>,
    /// This daemon's name in MQTT topics (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub mqtt_node: Option<String>,
    /// First level of MQTT topics [default: eboardd].
    #[arg(long, value_name = "PREFIX")]
    pub mqtt_prefix: Option<String>,
    /// Write relay files (games.pgn, LiveChessCloud JSON) into this directory.
    #[arg(long, value_name = "DIR")]
    pub relay_dir: Option<PathBuf>,
    /// File holding the access token that state-changing requests must carry.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The access token itself (visible to other local users: prefer --token-file).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Event name (PGN Event tag).
    #[arg(long)]
    pub event: Option<String>,
    /// Site (PGN Site tag).
    #[arg(long)]
    pub site: Option<String>,
    /// Round number [default: 1, or [event] round of the configuration].
    #[arg(long)]
    pub round: Option<u32>,
    /// PGN TimeControl tag, e.g. 5400+30.
    #[arg(long)]
    pub time_control: Option<String>,
    /// A web origin (e.g. https://broadcast.example.org) whose pages may open the event-stream
    /// WebSocket besides the server's own; repeat for several.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Restrict the LiveChess API to pages of these web origins (default: any, as LiveChess,
    /// since lichess's DGT page connects from its own origin); repeat for several.
    #[arg(long = "livechess-allow-origin", value_name = "ORIGIN")]
    pub livechess_allow_origin: Vec<String>,
    /// Client connections at once over the HTTP and LiveChess servers (default: from the
    /// descriptor limit, keeping a reserve for boards, captures and relay files).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Client connections at once from one address (default: half of --max-connections).
    #[arg(long, value_name = "N")]
    pub max_connections_per_address: Option<usize>,
    /// Broadcast delay: public outputs show the round as it stood SECS ago; requests with the
    /// token see it live (default 0).
    #[arg(long, value_name = "SECS")]
    pub delay_secs: Option<u64>,
    /// Push the round to this lichess broadcast round (its id, as in
    /// lichess.org/broadcast/NAME/ROUND/AbCd1234); repeat for more than 100 boards (boards
    /// 1–100 on the first, 101–200 on the second, ...).
    #[arg(long = "lichess-round", value_name = "ID")]
    pub lichess_round: Vec<String>,
    /// File holding the lichess API token (study:write scope) for --lichess-round.
    #[arg(long, value_name = "FILE")]
    pub lichess_token_file: Option<PathBuf>,
    /// lichess's address [default: https://lichess.org].
    #[arg(long, value_name = "URL")]
    pub lichess_url: Option<String>,
}

fn parse_addr(what: &str, s: &str) -> Result<Option<SocketAddr>, ArgError> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let s = s
        .strip_prefix("localhost:")
        .map_or(s.to_string(), |p| format!("127.0.0.1:{p}"));
    s.parse().map(Some).map_err(|_| {
        ArgError::from(format!(
            "{what}: {s:?} is not an address like 127.0.0.1:8080"
        ))
    })
}

fn check_text(what: &str, v: &Option<String>) -> Result<(), ArgError> {
    match v {
        Some(s) if s.chars().any(crate::pgn::unsafe_char) || s.chars().count() > 200 => {
            Err(ArgError::from(format!(
                "{what} must be at most 200 characters without control or direction characters"
            )))
        }
        _ => Ok(()),
    }
}

impl OutputArgs {
    /// The defaults, with only the HTTP address given (for commands that offer no other output
    /// option, like `eboardd demo`).
    pub fn parse_from_http(http: &str) -> Result<OutputArgs, ArgError> {
        <OutputArgs as clap::FromArgMatches>::from_arg_matches(
            &<OutputArgs as clap::Args>::augment_args(clap::Command::new("outputs"))
                .try_get_matches_from(["outputs", "--http", http])
                .map_err(|e| e.to_string())?,
        )
        .map_err(|e| ArgError::from(e.to_string()))
    }

    /// These options completed from the configuration file: every output option not given on
    /// the command line is taken from `[outputs]`, the event name, site and round from
    /// `[event]` (flags override the file).
    pub fn with_file(&self, cfg: &crate::config::Config) -> OutputArgs {
        let o = &cfg.outputs;
        let mut a = self.clone();
        let fill = |flag: &mut Option<String>, file: &Option<String>| {
            if flag.is_none() {
                flag.clone_from(file);
            }
        };
        fill(&mut a.http, &o.http);
        fill(&mut a.livechess, &o.livechess);
        if a.mqtt.is_empty()
            && let Some(urls) = &o.mqtt
        {
            // Never empty: the file's checks refuse an empty list.
            a.mqtt = urls.to_vec();
        }
        fill(&mut a.mqtt_node, &o.mqtt_node);
        fill(&mut a.mqtt_prefix, &o.mqtt_prefix);
        fill(&mut a.event, &cfg.event.name);
        fill(&mut a.site, &cfg.event.site);
        if a.relay_dir.is_none() {
            a.relay_dir.clone_from(&o.relay_dir);
        }
        if a.token.is_none() && a.token_file.is_none() {
            a.token_file.clone_from(&o.token_file);
        }
        if a.allow_origin.is_empty() {
            a.allow_origin.clone_from(&o.allowed_origins);
        }
        if a.livechess_allow_origin.is_empty() {
            a.livechess_allow_origin
                .clone_from(&o.livechess_allowed_origins);
        }
        if a.delay_secs.is_none() {
            a.delay_secs = o.delay_secs;
        }
        if let Some(l) = &o.lichess {
            if a.lichess_round.is_empty() {
                a.lichess_round = l.round.to_vec();
            }
            if a.lichess_token_file.is_none() {
                a.lichess_token_file = Some(l.token_file.clone());
            }
            fill(&mut a.lichess_url, &l.url);
        }
        if a.round.is_none() {
            a.round = cfg
                .event
                .round
                .as_deref()
                .and_then(|r| r.trim().parse().ok());
        }
        a
    }

    /// The output configuration these options describe.
    pub fn output_config(&self) -> Result<OutputConfig, ArgError> {
        // The first error first, in the order the options are checked.
        let token = self.token()?;
        let mqtt = self.mqtt()?;
        self.check_limits()?;
        let lichess = self.lichess()?;
        Ok(OutputConfig {
            allowed_origins: self.allow_origin.clone(),
            livechess_allowed_origins: (!self.livechess_allow_origin.is_empty())
                .then(|| self.livechess_allow_origin.clone()),
            max_connections: self.max_connections,
            max_connections_per_address: self.max_connections_per_address,
            http: parse_addr(
                "--http",
                self.http.as_deref().unwrap_or(crate::output::DEFAULT_HTTP),
            )?,
            livechess: match &self.livechess {
                Some(s) => parse_addr("--livechess", s)?,
                None => None,
            },
            mqtt,
            relay_dir: self.relay_dir.clone(),
            token,
            relay_debounce_ms: None,
            delay: self
                .delay_secs
                .filter(|&d| d > 0)
                .map(std::time::Duration::from_secs),
            round_file: None,
            lichess,
            // The daemon sets its boards' share; the servers of captures have none.
            descriptors_for_boards: 0,
        })
    }

    /// The access token, given on the command line or read from its file (at least 8
    /// characters).
    fn token(&self) -> Result<Option<String>, ArgError> {
        let token = match (&self.token, &self.token_file) {
            (Some(_), Some(_)) => {
                return Err(ArgError::from("give --token or --token-file, not both"));
            }
            (Some(t), None) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .map_err(|e| format!("token file {}: {e}", f.display()))?
                    .trim()
                    .to_string(),
            ),
            (None, None) => None,
        };
        if token.as_ref().is_some_and(|t| t.len() < 8) {
            return Err(ArgError::from(
                "the access token must have at least 8 characters",
            ));
        }
        Ok(token)
    }

    /// The origins are web origins, the delay at most [`crate::config::MAX_DELAY_SECS`], the
    /// connection caps at least 1.
    fn check_limits(&self) -> Result<(), ArgError> {
        for o in self.allow_origin.iter().chain(&self.livechess_allow_origin) {
            if !crate::output::ws::valid_origin(o) {
                return Err(ArgError::from(format!(
                    "{o:?} is not a web origin like https://broadcast.example.org"
                )));
            }
        }
        if self
            .delay_secs
            .is_some_and(|d| d > crate::config::MAX_DELAY_SECS)
        {
            return Err(ArgError::Invalid(format!(
                "--delay-secs must be at most {} (3 hours)",
                crate::config::MAX_DELAY_SECS
            )));
        }
        if self.max_connections == Some(0) || self.max_connections_per_address == Some(0) {
            return Err(ArgError::from("connection caps must be at least 1"));
        }
        Ok(())
    }

    /// The MQTT brokers (`--mqtt`, none: no MQTT), with the node and the topic prefix.
    fn mqtt(&self) -> Result<Option<MqttConfig>, ArgError> {
        Ok(match &self.mqtt[..] {
            [] => None,
            urls => {
                let mut m = MqttConfig::from_urls(urls)?;
                if let Some(n) = &self.mqtt_node {
                    m.node = n.clone();
                }
                m.prefix = self.mqtt_prefix.clone().unwrap_or_else(|| "eboardd".into());
                Some(m)
            }
        })
    }

    /// The lichess broadcast rounds and their token file: both or neither.
    fn lichess(&self) -> Result<Option<crate::output::lichess::LichessConfig>, ArgError> {
        Ok(match (&self.lichess_round[..], &self.lichess_token_file) {
            ([], None) => None,
            ([], Some(_)) => {
                return Err(ArgError::from(
                    "lichess: a token file but no broadcast round: give --lichess-round ID",
                ));
            }
            (_, None) => {
                return Err(ArgError::from(
                    "lichess: give --lichess-token-file FILE (an API token with the study:write scope) with --lichess-round",
                ));
            }
            (rounds, Some(file)) => Some(
                crate::output::lichess::LichessConfig::new(
                    rounds.to_vec(),
                    file,
                    self.lichess_url.as_deref(),
                )
                .map_err(|e| ArgError::Invalid(e.to_string()))?,
            ),
        })
    }

    /// The round information these options describe.
    pub fn round_info(&self) -> Result<RoundInfo, ArgError> {
        check_text("--event", &self.event)?;
        check_text("--site", &self.site)?;
        check_text("--time-control", &self.time_control)?;
        let round = self.round.unwrap_or(1);
        if round == 0 || round > 999 {
            return Err(ArgError::from("--round must be from 1 to 999"));
        }
        Ok(RoundInfo {
            event: self.event.clone(),
            site: self.site.clone(),
            round,
            time_control: self.time_control.clone(),
            epoch_ms: now_ms(),
            ..Default::default()
        })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `eboardd serve-replay`: play captures into the broadcaster and serve every output.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeReplayArgs {
    /// Capture files (format eboard-capture v1) or capture directories.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Replay speed: event seconds per wall second (0 = as fast as possible).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Every file is its own board (board-1, board-2, ...), all starting together, instead of
    /// merging the files by time as `eboardd replay` does.
    #[arg(long)]
    pub boards: bool,
    /// Exit when the replay is over (default: keep serving until interrupted).
    #[arg(long)]
    pub exit: bool,
    /// Print every event as a JSON line on standard output, as the hub publishes it (as
    /// `eboardd run --events`).
    #[arg(long)]
    pub events: bool,
    /// Configuration file (TOML, as `eboardd run` takes it): its `[outputs]`, `[event]` and
    /// the players of its `[[board]]`s, the flags overriding them.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Outputs.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run `eboardd serve-replay`.
pub fn serve_replay(args: ServeReplayArgs) -> ExitCode {
    // Colours only on a terminal, as every subcommand.
    super::init_logging("info");
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("eboardd: error: {e}");
        ExitCode::from(2)
    };
    if !(args.speed >= 0.0 && args.speed.is_finite()) {
        return fail(&format!("--speed must be 0 or more, not {}", args.speed));
    }
    let (out, setup) = match outputs_of(&args.out, args.config.as_deref()) {
        Ok(o) => o,
        Err(e) => return fail(&e),
    };
    let crate::daemon::OutputSetup { config: cfg, round } = setup;
    let (info, plan) = match replayed_round(&args, &out, round) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&format!("starting the runtime: {e}")),
    };
    runtime.block_on(async move {
        let hub = replay_hub(info, &plan);
        let outputs = match crate::output::start(hub.clone(), &cfg).await {
            Ok(o) => o,
            Err(e) => return fail(&e),
        };
        if let Some(a) = outputs.http {
            eprintln!("eboardd: serving http://{a}/");
        }
        play(&args, &hub, plan).await;
        outputs.shutdown().await;
        ExitCode::SUCCESS
    })
}

/// The captures of `args` laid out for replay (read as they are played: memory does not grow
/// with them), and the round they make: the same tags as `eboardd replay` of the same captures
/// writes (their date, their event and site where the flags give none, their round where
/// `out` sets none).
fn replayed_round(
    args: &ServeReplayArgs,
    out: &OutputArgs,
    mut info: RoundInfo,
) -> Result<(RoundInfo, crate::replay::Timeline), crate::replay::ReplayError> {
    let layout = if args.boards {
        crate::replay::Layout::Round
    } else {
        crate::replay::Layout::AsRecorded
    };
    let plan = crate::replay::Timeline::open(&args.files, layout)?;
    for w in plan.warnings() {
        eprintln!("eboardd: warning: {w}");
    }
    info.date = plan.date();
    if info.event.is_none() {
        info.event = plan.event();
    }
    if info.site.is_none() {
        info.site = plan.site();
    }
    if out.round.is_none()
        && let Some(r) = plan.round().filter(|r| (1..=999).contains(r))
    {
        info.round = r;
    }
    Ok((info, plan))
}

/// The hub of a replayed round: each board with the number its capture recorded, as the
/// daemon had given it (the others the next free ones), listed and shown active.
fn replay_hub(info: RoundInfo, plan: &crate::replay::Timeline) -> Hub {
    let hub = Hub::new(info, HubConfig::default());
    for (b, n) in plan.numbers() {
        hub.number_board(b, Some(n));
    }
    let boards: Vec<String> = plan.boards().map(String::from).collect();
    hub.update_info(|i| i.boards.clone_from(&boards));
    for b in &boards {
        let status = crate::output::BoardStatus {
            state: crate::output::LinkState::Active,
            source: Some("replay".into()),
            ..Default::default()
        };
        hub.preset_status(b, status);
    }
    hub
}

/// Play `plan` into `hub` at the speed of `args` (printing its events when asked) until it is
/// done and, unless `--exit`, Ctrl-C; or until Ctrl-C.
async fn play(args: &ServeReplayArgs, hub: &Hub, plan: crate::replay::Timeline) {
    let print = if args.events {
        crate::daemon::Print::Events
    } else {
        crate::daemon::Print::Nothing
    };
    let mut followers = crate::service::Services::new();
    if let Some(printer) = crate::daemon::print_events(hub, print, followers.token()) {
        followers.spawn("printer", |_| printer);
    }
    let speed = (args.speed > 0.0).then_some(args.speed);
    let mut replay = crate::output::replay_source::spawn(hub.clone(), plan, speed);
    let interrupted = tokio::select! {
        _ = replay.wait_done() => false,
        _ = tokio::signal::ctrl_c() => true,
    };
    if !interrupted {
        eprintln!(
            "eboardd: replay done: {} events",
            replay.events.load(std::sync::atomic::Ordering::Relaxed)
        );
        if !args.exit {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    // Let relay files and MQTT catch up before stopping.
    tokio::time::sleep(Duration::from_millis(100)).await;
    replay.stop();
    followers.shutdown(Duration::from_secs(1)).await;
}

/// Options of `eboardd serve-mqtt`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeMqttArgs {
    /// The broker the daemons publish to, `mqtt://HOST[:PORT]`; repeat for the nodes of a
    /// broker cluster (read from one, the next when its connection breaks).
    #[arg(long, value_name = "URL", required = true)]
    pub from: Vec<String>,
    /// The first topic level the daemons publish under (their `--mqtt-prefix`).
    #[arg(long, value_name = "PREFIX", default_value = "eboardd")]
    pub from_prefix: String,
    /// Configuration file (TOML, as `eboardd run` takes it): its `[outputs]`, `[event]` and
    /// the players of its `[[board]]`s, the flags overriding them.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Outputs.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run `eboardd serve-mqtt`: until SIGINT or SIGTERM.
pub fn serve_mqtt(args: ServeMqttArgs) -> ExitCode {
    super::init_logging("info");
    let fail = |e: String| {
        eprintln!("eboardd: error: {e}");
        ExitCode::from(2)
    };
    let (out, setup) = match outputs_of(&args.out, args.config.as_deref()) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    if !out.mqtt.is_empty() {
        return fail(
            "serve-mqtt reads the round from --from; publishing it again (--mqtt, or [outputs] \
             mqtt of the configuration) would feed it back"
                .into(),
        );
    }
    let from = match crate::output::MqttConfig::from_urls(&args.from) {
        Ok(m) => m,
        Err(e) => return fail(e.to_string()),
    };
    let crate::daemon::OutputSetup {
        config: cfg,
        round: info,
    } = setup;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(format!("starting the runtime: {e}")),
    };
    runtime.block_on(async move {
        let hub = Hub::new(info, HubConfig::default());
        let outputs = match crate::output::start(hub.clone(), &cfg).await {
            Ok(o) => o,
            Err(e) => return fail(e.to_string()),
        };
        if let Some(a) = outputs.http {
            eprintln!("eboardd: serving http://{a}/");
        }
        let stop = tokio_util::sync::CancellationToken::new();
        let source = crate::output::mqtt_source::spawn(
            hub.clone(),
            crate::output::mqtt_source::SourceConfig {
                brokers: from.brokers,
                prefix: args.from_prefix,
            },
            stop.clone(),
        );
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(e) => return fail(format!("installing signal handlers: {e}")),
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.cancel();
        let _ = source.await;
        outputs.shutdown().await;
        ExitCode::SUCCESS
    })
}

/// The outputs of `eboardd run`: the output flags completed from the configuration file,
/// with the players configured per board (they reach every output, as they reach the
/// captures). `eboardd check` checks them the same way.
pub(super) fn output_setup(
    flags: &OutputArgs,
    file: Option<&crate::config::Config>,
) -> Result<crate::daemon::OutputSetup, ArgError> {
    let out = match file {
        Some(cfg) => flags.with_file(cfg),
        None => flags.clone(),
    };
    let config = out.output_config()?;
    let mut round = out.round_info()?;
    if let Some(cfg) = file {
        crate::daemon::configure_round(&mut round, cfg);
    }
    if let Some(l) = &config.lichess {
        let numbers = round
            .boards
            .iter()
            .filter_map(|id| crate::output::model::configured_number(id));
        l.check_boards(numbers)?;
    }
    Ok(crate::daemon::OutputSetup { config, round })
}

/// The outputs of `eboardd run`, `serve-replay` and `serve-mqtt`: the configuration file of
/// `--config` read (its `[outputs]` and `[event]` drive the outputs, flags override them, and
/// its `[[board]]`s name the players), with the flags it completed. The error is one line.
pub(super) fn outputs_of(
    flags: &OutputArgs,
    config: Option<&std::path::Path>,
) -> Result<(OutputArgs, crate::daemon::OutputSetup), String> {
    let file = config
        .map(crate::config::Config::load)
        .transpose()
        .map_err(|e| e.to_string())?;
    let completed = match &file {
        Some(cfg) => flags.with_file(cfg),
        None => flags.clone(),
    };
    let setup = output_setup(flags, file.as_ref()).map_err(|e| e.to_string())?;
    Ok((completed, setup))
}
