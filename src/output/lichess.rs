//! Pushing the round to a lichess broadcast (`docs/broadcast.md` §7): the round's PGN, every
//! board in board order, POSTed to `{url}/api/broadcast/round/{id}/push` whenever it changed.
//!
//! - Coalesced: at most one request in flight, at most one a second, and the PGN is rendered
//!   again just before each request, so the last state always arrives; a round whose PGN is
//!   the one lichess last took is not sent again.
//! - lichess takes at most [`GAMES_PER_ROUND`] games per broadcast round (its push takes up to
//!   100 games a round, lichess-org/api PR #500; a round shows at most 100, lila's
//!   `maxChaptersToShow`): with several round ids, the boards numbered 1–100 go to the first,
//!   101–200 to the second, and so on — fixed ranges, so a game never moves between ids as
//!   boards come and go.
//! - lichess's answer (`{"games": [{"tags": …, "moves": N} | {"tags": …, "error": "…"}]}`) is
//!   kept per round and shown in `GET /api/v1/health` and on the page: a game lichess refused
//!   says why.
//! - 429 waits for `Retry-After`; a refusal that waiting will not mend (401: the token is
//!   wrong; 403, 404: the round is unknown or not the token's; 400, 410, 422) is tried again
//!   only every [`REFUSED_RETRY`]; any other failure backs off from 1 s, doubling to 60 s. Every
//!   failure is in health's `failing` (part `lichess`, the round id) until a push is taken.
//! - With a broadcast delay the pusher is given the delayed hub: lichess gets the delayed view.
//! - The token is never logged, shown or serialised ([`Token`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::hub::Hub;
use super::metrics::Part;
use super::model::RoundState;
use super::render;
use tokio_util::sync::CancellationToken;

/// The most games lichess takes in one broadcast round (lichess-org/api PR #500).
pub const GAMES_PER_ROUND: u32 = 100;
/// The shortest time between two requests.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The first wait after a failed request; it doubles with each failure in a row.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// The longest wait after failed requests.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The wait after lichess refused a push for a reason waiting will not mend (401, 403, 404).
pub const REFUSED_RETRY: Duration = Duration::from_secs(600);
/// How long one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// lichess's address.
pub const DEFAULT_URL: &str = "https://lichess.org";

/// An API token: kept out of every log line, debug print and serialisation.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from its text (surrounding white space dropped).
    pub fn new(text: &str) -> Token {
        Token(text.trim().to_string())
    }

    /// The `Authorization` header value.
    fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(hidden)")
    }
}

/// `[outputs.lichess]` as the configuration file gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LichessFile {
    /// The broadcast round id, or a list of them (100 boards each, in board order).
    pub round: RoundIds,
    /// File holding an API token with the `study:write` scope.
    pub token_file: std::path::PathBuf,
    /// lichess's address (default `https://lichess.org`).
    pub url: Option<String>,
}

/// One round id or several.
pub type RoundIds = super::OneOrMany;

/// Where and how to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LichessConfig {
    /// Broadcast round ids: the first takes boards 1–100, the next 101–200, …
    pub rounds: Vec<String>,
    /// The API token.
    pub token: Token,
    /// lichess's address, without a trailing `/`.
    pub url: String,
}

/// Why a lichess setting cannot be used: one line for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lichess: {0}")]
pub struct LichessConfigError(pub String);

impl LichessConfig {
    /// Checks the settings and reads the token file.
    pub fn new(
        rounds: Vec<String>,
        token_file: &std::path::Path,
        url: Option<&str>,
    ) -> Result<LichessConfig, LichessConfigError> {
        let err = |m: String| LichessConfigError(m);
        if rounds.is_empty() {
            return Err(err(
                "give the broadcast round id (round = \"AbCd1234\")".into()
            ));
        }
        for id in &rounds {
            if id.len() != 8 || !id.bytes().all(|c| c.is_ascii_alphanumeric()) {
                return Err(err(format!(
                    "{id:?} is not a broadcast round id (8 letters and digits, as in \
                     lichess.org/broadcast/…/…/AbCd1234)"
                )));
            }
        }
        let url = url.unwrap_or(DEFAULT_URL).trim_end_matches('/').to_string();
        if !(url.starts_with("https://") || url.starts_with("http://"))
            || reqwest::Url::parse(&url).is_err()
        {
            return Err(err(format!("url {url:?} is not an http(s) address")));
        }
        let text = std::fs::read_to_string(token_file)
            .map_err(|e| err(format!("token file {}: {e}", token_file.display())))?;
        let token = Token::new(&text);
        if token.0.is_empty() || token.0.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err(format!(
                "token file {}: no token in it (one line: the API token)",
                token_file.display()
            )));
        }
        Ok(LichessConfig { rounds, token, url })
    }

    /// The highest board number these round ids can take.
    pub fn capacity(&self) -> u32 {
        GAMES_PER_ROUND.saturating_mul(self.rounds.len() as u32)
    }

    /// An error when a configured board number is beyond [`Self::capacity`].
    pub fn check_boards(&self, numbers: impl IntoIterator<Item = u32>) -> Result<(), String> {
        let Some(max) = numbers.into_iter().max() else {
            return Ok(());
        };
        if max <= self.capacity() {
            return Ok(());
        }
        let needed = max.div_ceil(GAMES_PER_ROUND);
        Err(format!(
            "lichess: board {max} needs {needed} broadcast round ids (lichess takes {GAMES_PER_ROUND} \
             games per round) but {} {} given: list them in [outputs.lichess] round = [...] \
             or repeat --lichess-round",
            self.rounds.len(),
            if self.rounds.len() == 1 { "is" } else { "are" }
        ))
    }
}

/// What the pusher is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PushState {
    /// Nothing pushed yet (no game).
    #[default]
    Waiting,
    /// The last request was taken.
    Ok,
    /// lichess asked to wait (429): waiting for `Retry-After`.
    RateLimited,
    /// The last request failed: retrying after a back-off.
    Retrying,
    /// lichess refused the token (401): tried again only every [`REFUSED_RETRY`].
    TokenRefused,
    /// lichess refused the push for a reason waiting will not mend (403, 404: the round id is
    /// unknown or not the token's account's): tried again only every [`REFUSED_RETRY`].
    Refused,
}

/// One game as lichess answered for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GameAnswer {
    /// The board number (from the game's `Round "R.B"` tag), when lichess echoed it.
    pub board: Option<u32>,
    /// White and Black as the tags say.
    pub white: Option<String>,
    /// Black.
    pub black: Option<String>,
    /// Moves lichess took, when it took the game.
    pub moves: Option<u64>,
    /// lichess's reason when it refused the game.
    pub error: Option<String>,
}

/// One broadcast round as pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoundPush {
    /// The round id.
    pub id: String,
    /// The board numbers it takes (first, last).
    pub boards: (u32, u32),
    /// Requests sent, and taken (2xx).
    pub pushes: u64,
    /// Requests lichess took.
    pub accepted: u64,
    /// Wall-clock epoch ms of the last request lichess took.
    pub last_accepted_ms: Option<i64>,
    /// lichess's answer per game to the last request it took.
    pub games: Vec<GameAnswer>,
}

/// The pusher's state, for health and the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushReport {
    /// What it is doing.
    pub state: PushState,
    /// Why, when something is wrong (lichess's status and message).
    pub message: Option<String>,
    /// Seconds until the next attempt while waiting after a failure.
    pub retry_in_secs: Option<u64>,
    /// Games lichess refused in its last answers (a game with an `error`).
    pub refused: usize,
    /// Board numbers no round id takes (more boards than the ids hold).
    pub unpushed_boards: Vec<u32>,
    /// Per round id.
    pub rounds: Vec<RoundPush>,
}

/// The shared report: written by the pusher, read by health and the page.
#[derive(Debug)]
pub struct LichessReport(Mutex<PushReport>);

impl LichessReport {
    /// A report for `cfg`'s round ids, nothing pushed yet.
    pub fn new(cfg: &LichessConfig) -> Arc<LichessReport> {
        let rounds = cfg
            .rounds
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let first = i as u32 * GAMES_PER_ROUND + 1;
                RoundPush {
                    id: id.clone(),
                    boards: (first, first + GAMES_PER_ROUND - 1),
                    pushes: 0,
                    accepted: 0,
                    last_accepted_ms: None,
                    games: Vec::new(),
                }
            })
            .collect();
        Arc::new(LichessReport(Mutex::new(PushReport {
            state: PushState::Waiting,
            message: None,
            retry_in_secs: None,
            refused: 0,
            unpushed_boards: Vec::new(),
            rounds,
        })))
    }

    /// The report now.
    pub fn snapshot(&self) -> PushReport {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, f: impl FnOnce(&mut PushReport)) {
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut r);
        r.refused = r
            .rounds
            .iter()
            .flat_map(|x| &x.games)
            .filter(|g| g.error.is_some())
            .count();
    }
}

/// The PGN of each round id (boards numbered into its range, in board order), and the numbers
/// of boards beyond every range.
pub fn bodies(round: &RoundState, ids: usize) -> (Vec<String>, Vec<u32>) {
    let mut out = vec![String::new(); ids];
    let mut unpushed = Vec::new();
    for b in round.boards() {
        let slot = ((b.number.max(1) - 1) / GAMES_PER_ROUND) as usize;
        let Some(body) = out.get_mut(slot) else {
            if b.game().is_some() {
                unpushed.push(b.number);
            }
            continue;
        };
        body.push_str(&render::board_pgn(round, b));
    }
    (out, unpushed)
}

/// How one request ended.
#[derive(Debug)]
enum Outcome {
    /// Taken (2xx), with lichess's answer per game.
    Taken(Vec<GameAnswer>),
    /// 429: wait this long (`Retry-After`, else a minute).
    TooMany(Duration),
    /// 401: the token is wrong.
    Unauthorized,
    /// 400, 403, 404, 410, 422: refused for a reason waiting will not mend.
    Refused(u16, String),
    /// Any other failure: the status (or none: no answer) and what was said.
    Failed(Option<u16>, String),
}

impl Outcome {
    /// The `status` label of `eboardd_lichess_push_total`.
    fn label(&self) -> &'static str {
        match self {
            Outcome::Taken(_) => "ok",
            Outcome::TooMany(_) => "rate_limited",
            Outcome::Unauthorized => "unauthorized",
            Outcome::Refused(..) => "refused",
            Outcome::Failed(Some(s), _) if *s >= 500 => "server_error",
            Outcome::Failed(Some(_), _) => "refused",
            Outcome::Failed(None, _) => "unreachable",
        }
    }

    /// What health shows of the push (`None`: taken, or lichess only asked to wait).
    fn fault(&self) -> Option<String> {
        match self {
            Outcome::Taken(_) | Outcome::TooMany(_) => None,
            Outcome::Unauthorized => Some(
                "401: lichess refused the token (check [outputs.lichess] token_file: a \
                 token with the study:write scope)"
                    .to_string(),
            ),
            Outcome::Refused(s, said) => Some(format!("{s}: {said}")),
            Outcome::Failed(Some(s), said) => Some(format!("{s}: {said}")),
            Outcome::Failed(None, said) => Some(format!("no answer: {said}")),
        }
    }
}

/// lichess's answer to a push.
#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    games: Vec<AnswerGame>,
}

#[derive(Debug, Deserialize)]
struct AnswerGame {
    #[serde(default)]
    tags: std::collections::HashMap<String, String>,
    moves: Option<u64>,
    error: Option<String>,
}

fn board_of_round_tag(tag: Option<&String>) -> Option<u32> {
    tag?.rsplit_once('.')?.1.parse().ok()
}

/// The seconds of a `Retry-After` header (a number of seconds; an HTTP date counts as a
/// minute).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs)
}

/// At most 200 characters of a text, on one line.
fn one_line(text: &str) -> String {
    let s: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    s.chars().take(200).collect()
}

async fn push(client: &reqwest::Client, cfg: &LichessConfig, id: &str, body: String) -> Outcome {
    let url = format!("{}/api/broadcast/round/{id}/push", cfg.url);
    let sent = client
        .post(&url)
        .header(reqwest::header::AUTHORIZATION, cfg.token.bearer())
        .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(body)
        .send()
        .await;
    let response = match sent {
        Ok(r) => r,
        // The error names the address, never the token (it is a header).
        Err(e) => return Outcome::Failed(None, one_line(&e.without_url().to_string())),
    };
    let status = response.status();
    let wait = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    match status.as_u16() {
        200..=299 => {
            let games = serde_json::from_str::<Answer>(&text)
                .map(|a| a.games)
                .unwrap_or_default()
                .into_iter()
                .map(|g| GameAnswer {
                    board: board_of_round_tag(g.tags.get("Round")),
                    white: g.tags.get("White").cloned(),
                    black: g.tags.get("Black").cloned(),
                    moves: g.moves,
                    error: g.error.map(|e| one_line(&e)),
                })
                .collect();
            Outcome::Taken(games)
        }
        429 => Outcome::TooMany(wait),
        401 => Outcome::Unauthorized,
        s => {
            let said = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
                .unwrap_or(text);
            if matches!(s, 400 | 403 | 404 | 410 | 422) {
                Outcome::Refused(s, one_line(&said))
            } else {
                Outcome::Failed(Some(s), one_line(&said))
            }
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The pusher: keeps lichess's rounds current until `stop` turns true.
pub struct Pusher {
    cfg: LichessConfig,
    client: reqwest::Client,
    report: Arc<LichessReport>,
    /// The PGN lichess last took, per round id.
    taken: Vec<Option<String>>,
    /// No request before this.
    next_at: Instant,
    backoff: Duration,
}

impl Pusher {
    /// A pusher for `cfg`, reporting into `report`.
    pub fn new(cfg: LichessConfig, report: Arc<LichessReport>) -> Result<Pusher, String> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("eboardd/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| format!("lichess: cannot make an HTTPS client: {e}"))?;
        let n = cfg.rounds.len();
        Ok(Pusher {
            cfg,
            client,
            report,
            taken: vec![None; n],
            next_at: Instant::now(),
            backoff: BACKOFF_START,
        })
    }

    /// The round ids whose PGN changed since lichess last took it (and is not empty).
    fn pending(&mut self, hub: &Hub) -> Vec<usize> {
        let (bodies, unpushed) = hub.with_round(|r| bodies(r, self.cfg.rounds.len()));
        self.report.update(|r| r.unpushed_boards = unpushed);
        bodies
            .iter()
            .enumerate()
            .filter(|(i, b)| !b.is_empty() && self.taken[*i].as_deref() != Some(b.as_str()))
            .map(|(i, _)| i)
            .collect()
    }

    /// Send round `i`'s PGN as it is now; returns whether to go on with the next round.
    async fn send(&mut self, hub: &Hub, i: usize) -> bool {
        let body = hub.with_round(|r| bodies(r, self.cfg.rounds.len()).0.swap_remove(i));
        let id = self.cfg.rounds[i].clone();
        let outcome = push(&self.client, &self.cfg, &id, body.clone()).await;
        if let Some(m) = hub.metrics() {
            m.lichess_push(outcome.label());
            m.set_fault(Part::Lichess, &id, outcome.fault());
        }
        let now = Instant::now();
        self.next_at = now + MIN_INTERVAL;
        match outcome {
            Outcome::Taken(games) => {
                self.taken(i, body, games);
                true
            }
            not_taken => {
                self.not_taken(i, not_taken, now);
                false
            }
        }
    }

    /// Lichess took round `i`'s PGN (`body`): the backoff starts again, and the games it
    /// refused are logged.
    fn taken(&mut self, i: usize, body: String, games: Vec<GameAnswer>) {
        let id = &self.cfg.rounds[i];
        self.taken[i] = Some(body);
        self.backoff = BACKOFF_START;
        for g in games.iter().filter(|g| g.error.is_some()) {
            tracing::warn!(
                "lichess round {id} refused the game of board {}: {}",
                g.board.map_or("?".into(), |b| b.to_string()),
                g.error.as_deref().unwrap_or("")
            );
        }
        self.report.update(|r| {
            r.state = PushState::Ok;
            r.message = None;
            r.retry_in_secs = None;
            let round = &mut r.rounds[i];
            round.pushes += 1;
            round.accepted += 1;
            round.last_accepted_ms = Some(now_ms());
            round.games = games;
        });
    }

    /// Lichess did not take round `i`'s PGN (`outcome`, at `now`): when to try again (what
    /// lichess asks, a slow retry for what waiting will not mend, a doubling backoff
    /// otherwise), logged once per reason and reported.
    fn not_taken(&mut self, i: usize, outcome: Outcome, now: Instant) {
        let id = self.cfg.rounds[i].clone();
        let (state, message, wait) = match outcome {
            Outcome::Taken(_) => return,
            Outcome::TooMany(wait) => {
                let wait = wait.max(MIN_INTERVAL);
                tracing::warn!(
                    "lichess asks to wait (429): next push in {}s",
                    wait.as_secs()
                );
                let message = "429 Too Many Requests".to_string();
                (PushState::RateLimited, message, wait)
            }
            Outcome::Unauthorized => {
                if self.report.snapshot().state != PushState::TokenRefused {
                    tracing::error!(
                        "lichess refused the token (401): check [outputs.lichess] token_file (a \
                         token with the study:write scope, of an account that may push to round \
                         {id}); tried again every {} min",
                        REFUSED_RETRY.as_secs() / 60
                    );
                }
                let message = "401: lichess refused the token".to_string();
                (PushState::TokenRefused, message, REFUSED_RETRY)
            }
            Outcome::Refused(status, said) => {
                let what = format!("{status}: {said}");
                let hint = if status == 404 {
                    " (is the round id right? [outputs.lichess] round)"
                } else {
                    ""
                };
                if self.report.snapshot().message.as_deref() != Some(&what) {
                    tracing::error!(
                        "lichess refused the push to round {id} ({what}){hint}; tried again \
                         every {} min",
                        REFUSED_RETRY.as_secs() / 60
                    );
                }
                (PushState::Refused, what, REFUSED_RETRY)
            }
            Outcome::Failed(status, said) => {
                let wait = self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                let what = match status {
                    Some(s) => format!("{s}: {said}"),
                    None => format!("no answer: {said}"),
                };
                tracing::warn!(
                    "lichess push to round {id} failed ({what}); again in {}s",
                    wait.as_secs()
                );
                (PushState::Retrying, what, wait)
            }
        };
        self.next_at = now + wait;
        self.report.update(|r| {
            r.state = state;
            r.message = Some(message);
            r.retry_in_secs = Some(wait.as_secs());
            r.rounds[i].pushes += 1;
        });
    }

    /// Push until `stop` turns true; one last push of what changed on stop, when allowed.
    pub async fn run(mut self, hub: Hub, stop: CancellationToken) {
        let mut changes = hub.changes();
        tracing::info!(
            "pushing to lichess ({}) rounds {}",
            self.cfg.url,
            self.cfg.rounds.join(", ")
        );
        loop {
            if stop.is_cancelled() {
                break;
            }
            let pending = self.pending(&hub);
            if pending.is_empty() {
                tokio::select! {
                    r = changes.changed() => if r.is_err() { break },
                    _ = stop.cancelled() => break,
                }
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(self.next_at) => {}
                _ = stop.cancelled() => break,
            }
            for i in pending {
                if !self.send(&hub, i).await {
                    break;
                }
                if stop.is_cancelled() {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(self.next_at) => {}
                    _ = stop.cancelled() => break,
                }
            }
        }
        // The last state, when lichess would take it now.
        if Instant::now() >= self.next_at {
            for i in self.pending(&hub) {
                if !self.send(&hub, i).await {
                    break;
                }
            }
        }
        // This pusher's failures end with it (a reload may push elsewhere).
        if let Some(m) = hub.metrics() {
            for id in &self.cfg.rounds {
                m.set_fault(Part::Lichess, id, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_never_printed() {
        let t = Token::new("lip_secret123\n");
        assert_eq!(format!("{t:?}"), "Token(hidden)");
        assert_eq!(t.bearer(), "Bearer lip_secret123");
    }

    #[test]
    fn round_ids_and_capacity() {
        let dir = std::env::temp_dir().join(format!("eboardd-lichess-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "lip_abc\n").unwrap();
        let cfg = LichessConfig::new(vec!["AbCd1234".into()], &file, None).unwrap();
        assert_eq!(cfg.url, "https://lichess.org");
        assert_eq!(cfg.capacity(), 100);
        assert!(cfg.check_boards([1, 100]).is_ok());
        let e = cfg.check_boards([3, 101]).unwrap_err();
        assert!(e.contains("board 101 needs 2 broadcast round ids"), "{e}");
        let bad = LichessConfig::new(vec!["nope".into()], &file, None).unwrap_err();
        assert!(
            bad.to_string().contains("not a broadcast round id"),
            "{bad}"
        );
        let missing = LichessConfig::new(vec!["AbCd1234".into()], &dir.join("x"), None);
        assert!(missing.unwrap_err().to_string().contains("token file"));
        std::fs::write(&file, "\n").unwrap();
        let empty = LichessConfig::new(vec!["AbCd1234".into()], &file, None);
        assert!(empty.unwrap_err().to_string().contains("no token"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The board numbers of a push body (its `Round` tags, `round.board`), in the order its
    /// games come.
    fn boards_of(body: &str) -> Vec<u32> {
        body.lines()
            .filter_map(|l| l.strip_prefix("[Round \""))
            .map(|r| {
                r.trim_end_matches("\"]")
                    .rsplit('.')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn boards_1_to_100_go_to_the_first_id_and_101_on_to_the_next_in_board_order() {
        use crate::core::event::{CoreEvent, EventKind};
        use crate::output::model::RoundInfo;
        let mut round = RoundState::new(RoundInfo::default());
        // Boards come in any order (plugged in at random); every one has a game.
        let mut numbers: Vec<u32> = (1..=130).collect();
        numbers.reverse();
        numbers.swap(3, 77);
        for n in &numbers {
            let id = format!("b-{n:03}");
            round.board_with_number(&id, Some(*n));
            let start = CoreEvent {
                t: 1,
                game: 1,
                kind: EventKind::GameStarted {
                    fen: shakmaty::fen::Fen::default().to_string(),
                    chess960: None,
                },
            };
            round.apply(u64::from(*n), &id, &start);
        }
        let (two, unpushed) = bodies(&round, 2);
        assert_eq!(boards_of(&two[0]), (1..=100).collect::<Vec<u32>>());
        assert_eq!(boards_of(&two[1]), (101..=130).collect::<Vec<u32>>());
        assert!(unpushed.is_empty());
        // One id for 130 boards: 101-130 are listed as not pushed.
        let (one, unpushed) = bodies(&round, 1);
        assert_eq!(boards_of(&one[0]), (1..=100).collect::<Vec<u32>>());
        assert_eq!(unpushed, (101..=130).collect::<Vec<u32>>());
    }

    #[test]
    fn retry_after_in_seconds() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&h), Duration::from_secs(60));
        h.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&h), Duration::from_secs(3));
    }
}
