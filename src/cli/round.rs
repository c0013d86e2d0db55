//! `eboardd round load FILE --round R`: send a pairings file to the running daemon's API
//! (`POST /api/v1/round`) with the token, and say what it answered.

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

/// Run `eboardd round ...`; the exit code.
pub fn run(a: RoundArgs) -> ExitCode {
    match a.command {
        RoundCommand::Load(l) => match load(&l) {
            Ok(msg) => {
                println!("{msg}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("eboardd: error: {e}");
                ExitCode::from(1)
            }
        },
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

fn load(a: &LoadArgs) -> Result<String, String> {
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
        .or_else(|| cfg.as_ref().and_then(|c| c.outputs.token_file.clone()))
        .ok_or("give --token-file (or --config with [outputs] token_file)")?;
    let token = std::fs::read_to_string(&token_file)
        .map_err(|e| format!("token file {}: {e}", token_file.display()))?
        .trim()
        .to_string();
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
    if let Some(f) = &format {
        f.parse::<crate::round::Format>()?;
    }
    let mut path = format!("/api/v1/round?round={}", a.round);
    if let Some(f) = &format {
        path.push_str(&format!("&format={f}"));
    }
    let (status, answer) = post(&host, &path, &token, &body)?;
    let v: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let why = v.get("error").and_then(Value::as_str).map_or_else(
            || String::from_utf8_lossy(&answer).trim().to_string(),
            str::to_string,
        );
        return Err(format!("round {} refused ({status}): {why}", a.round));
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

/// One HTTP/1.1 POST; (status, body).
fn post(host: &str, path: &str, token: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let addr = host
        .to_socket_addrs()
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("cannot reach the daemon at http://{host}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
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
    let head = String::from_utf8_lossy(&resp[..split]);
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
    Ok((status, body))
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
