//! `eboardd round load FILE --round R [--pairs LIST]`: send a pairings file (or a TRF and the
//! pairing engine's list) to the running daemon's API (`POST /api/v1/round`) with the token,
//! and say what it answered. `eboardd round results --round R`: fetch the round's results
//! file the daemon writes (`GET /api/v1/rounds/R/results.trf|csv|res`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

/// `eboardd round ...`.
#[derive(Debug, clap::Args)]
pub struct RoundArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RoundCommand,
}

/// Subcommands of `eboardd round`.
#[derive(Debug, clap::Subcommand)]
pub enum RoundCommand {
    /// Load a round's pairings (FIDE TRF or CSV) into the running daemon.
    Load(LoadArgs),
    /// Write a round's confirmed results (the loaded TRF filled in, CSV, or Vega's .res).
    Results(ResultsArgs),
}

/// How to reach the running daemon.
#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// The daemon's HTTP API [default: [outputs] http of --config, else
    /// http://127.0.0.1:8080].
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// File holding the access token [default: [outputs] token_file of --config].
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The daemon's configuration, for its address and token file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `eboardd round results`.
#[derive(Debug, clap::Args)]
pub struct ResultsArgs {
    /// The round number.
    #[arg(long)]
    pub round: u32,
    /// trf (the loaded TRF with the round's results, points and ranks), csv, or res (Vega).
    #[arg(long, default_value = "trf")]
    pub format: String,
    /// Write the file here [default: standard output].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// `eboardd round load`.
#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The pairings file: a TRF from Swiss-Manager, Vega or JaVaFo, or a CSV with the columns
    /// board,white,black[,white_fide_id,black_fide_id,white_title,black_title,white_rating,
    /// black_rating].
    pub file: PathBuf,
    /// The round number.
    #[arg(long)]
    pub round: u32,
    /// trf or csv [default: from the file name, else from the content].
    #[arg(long)]
    pub format: Option<String>,
    /// The pairing list JaVaFo or bbpPairings printed (`-p FILE`: the number of pairs, then
    /// `white black` start ranks a line, `N 0` a bye) for the round; FILE is then the TRF it
    /// was paired from.
    #[arg(long, value_name = "LIST")]
    pub pairs: Option<PathBuf>,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

/// Run `eboardd round ...`; the exit code.
pub fn run(a: RoundArgs) -> ExitCode {
    let done = match a.command {
        RoundCommand::Load(l) => load(&l).map(|msg| println!("{msg}")),
        RoundCommand::Results(r) => results(&r),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboardd: error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `host:port` of `--server` (`http://HOST:PORT[/]`, or `HOST:PORT`).
fn authority(server: &str) -> Result<String, String> {
    let s = server.trim();
    if s.starts_with("https://") {
        return Err("https is not supported here: give the daemon's own http:// address".into());
    }
    let s = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
    if s.is_empty() || s.contains('/') || !s.contains(':') {
        return Err(format!("--server {server:?}: give http://HOST:PORT"));
    }
    Ok(s.to_string())
}

/// The daemon's `host:port` and its token (`None` when no token file is given or configured).
fn daemon(a: &DaemonArgs) -> Result<(String, Option<String>), String> {
    let cfg = match &a.config {
        Some(p) => Some(crate::config::Config::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let server = match (&a.server, cfg.as_ref().and_then(|c| c.outputs.http.clone())) {
        (Some(s), _) => s.clone(),
        (None, Some(h)) if !h.eq_ignore_ascii_case("off") => h,
        _ => format!("http://{}", crate::output::DEFAULT_HTTP),
    };
    let host = authority(&server)?;
    let token_file = a
        .token_file
        .clone()
        .or_else(|| cfg.as_ref().and_then(|c| c.outputs.token_file.clone()));
    let token = match token_file {
        Some(f) => Some(
            std::fs::read_to_string(&f)
                .map_err(|e| format!("token file {}: {e}", f.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    Ok((host, token))
}

/// `eboardd round results`: the daemon's results file of the round, to `--out` or stdout.
fn results(a: &ResultsArgs) -> Result<(), String> {
    let format: crate::output::rounds::ResultsFormat = a.format.parse()?;
    let ext = match format {
        crate::output::rounds::ResultsFormat::Trf => "trf",
        crate::output::rounds::ResultsFormat::Csv => "csv",
        crate::output::rounds::ResultsFormat::Res => "res",
    };
    let (host, token) = daemon(&a.daemon)?;
    let path = format!("/api/v1/rounds/{}/results.{ext}", a.round);
    let (status, head, body) = request(&host, "GET", &path, token.as_deref(), &[])?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "round {} results refused ({status}): {}",
            a.round,
            why(&body)
        ));
    }
    match &a.out {
        Some(f) => std::fs::write(f, &body).map_err(|e| format!("{}: {e}", f.display()))?,
        None => std::io::stdout()
            .write_all(&body)
            .map_err(|e| format!("standard output: {e}"))?,
    }
    let complete = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("x-round-complete:") && l.contains("true")
    });
    if !complete {
        eprintln!(
            "eboardd: warning: round {} is not complete: the boards without a confirmed result \
             are left out",
            a.round
        );
    }
    Ok(())
}

/// The daemon's reason of a refusal (`{"error": "..."}`), else its body.
fn why(answer: &[u8]) -> String {
    let v: Value = serde_json::from_slice(answer).unwrap_or(Value::Null);
    v.get("error").and_then(Value::as_str).map_or_else(
        || String::from_utf8_lossy(answer).trim().to_string(),
        str::to_string,
    )
}

fn load(a: &LoadArgs) -> Result<String, String> {
    let (host, token) = daemon(&a.daemon)?;
    let token = token.ok_or("give --token-file (or --config with [outputs] token_file)")?;
    let body = std::fs::read(&a.file).map_err(|e| format!("{}: {e}", a.file.display()))?;
    if body.len() > crate::output::http::MAX_PAIRINGS_BODY {
        return Err(format!("{}: larger than 1 MiB", a.file.display()));
    }
    let ext = a
        .file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match (&a.format, ext.as_deref()) {
        (Some(f), _) => Some(f.clone()),
        (None, Some("trf" | "trfx")) => Some("trf".into()),
        (None, Some("csv")) => Some("csv".into()),
        _ => None,
    };
    let format = match (&a.pairs, format) {
        (Some(_), Some(f)) if f.parse::<crate::round::Format>()? != crate::round::Format::Trf => {
            return Err(format!(
                "--pairs goes with the TRF it was paired from, not a {f} file"
            ));
        }
        (Some(_), _) => Some("trf".to_string()),
        (None, f) => f,
    };
    if let Some(f) = &format {
        f.parse::<crate::round::Format>()?;
    }
    let mut path = format!("/api/v1/round?round={}", a.round);
    if let Some(f) = &format {
        path.push_str(&format!("&format={f}"));
    }
    if let Some(list) = &a.pairs {
        let bytes = std::fs::read(list).map_err(|e| format!("{}: {e}", list.display()))?;
        let pairs = crate::round::pairs::parse(&crate::round::decode(&bytes))
            .map_err(|e| format!("{}: {e}", list.display()))?;
        let query: Vec<String> = pairs
            .iter()
            .map(|p| format!("{}-{}", p.white, p.black))
            .collect();
        path.push_str(&format!("&pairs={}", query.join(",")));
    }
    let (status, _, answer) = request(&host, "POST", &path, Some(&token), &body)?;
    let v: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        return Err(format!(
            "round {} refused ({status}): {}",
            a.round,
            why(&answer)
        ));
    }
    let boards = v
        .pointer("/round/boards")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = format!("round {} loaded", a.round);
    for b in boards {
        let name = |side: &str| {
            b.pointer(&format!("/{side}/name"))
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        };
        if b.pointer("/white/name").is_some() || b.pointer("/black/name").is_some() {
            out.push_str(&format!(
                "\n  {}: {} - {}",
                b.get("board").and_then(Value::as_str).unwrap_or("?"),
                name("white"),
                name("black")
            ));
        }
    }
    Ok(out)
}

/// One HTTP/1.1 request (the token sent when given); (status, head, body).
fn request(
    host: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> Result<(u16, String, Vec<u8>), String> {
    let addr = host
        .to_socket_addrs()
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("cannot reach the daemon at http://{host}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|_| s.write_all(body))
        .map_err(|e| format!("sending to http://{host}: {e}"))?;
    let mut resp = Vec::new();
    s.take(4 * 1024 * 1024)
        .read_to_end(&mut resp)
        .map_err(|e| format!("reading the answer of http://{host}: {e}"))?;
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the daemon's answer has no end of headers")?;
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or("the daemon's answer has no status")?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let mut body = resp[split + 4..].to_vec();
    if chunked {
        body = dechunk(&body);
    }
    Ok((status, head, body))
}

/// The payload of a chunked body (as far as it is well formed).
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = b.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&b[..i])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok());
        let Some(n) = size.filter(|&n| n > 0) else {
            break;
        };
        let start = i + 2;
        let Some(chunk) = b.get(start..start + n) else {
            break;
        };
        out.extend_from_slice(chunk);
        b = b.get(start + n + 2..).unwrap_or(&[]);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_addresses_and_chunks() {
        assert_eq!(
            super::authority("http://127.0.0.1:8080/").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            super::authority("localhost:9000").unwrap(),
            "localhost:9000"
        );
        assert!(super::authority("https://x:1").is_err());
        assert!(super::authority("http://host").is_err());
        assert_eq!(
            super::dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
            b"abcde"
        );
    }
}
