//! Golden tests: replay the sample captures in `tests/data/captures/<folder>/gNNNN.jsonl` with the
//! built `eboardd` binary and compare what it prints with `gNNNN.truth.json`.
//!
//! - PGN (`eboardd replay FILE`): exactly one game; its main line, in SAN, equals `sans`, every
//!   move legal from the start position; the Seven Tag Roster is present; `Result` equals `result`
//!   when the truth says the game ended on the board; Chess960 games carry `Variant`, and they and
//!   set-up positions carry `SetUp` and `FEN`.
//! - Events (`eboardd replay --events FILE`): every line is a version-1 event with increasing
//!   `seq`; the first `game_started` has `fen` giving the position of `start_fen`, and `chess960`
//!   (the start position number) exactly when the truth says Chess960.
//!
//! FENs are compared as positions (placement, side to move, castling rights, en passant square),
//! not as text: the move counters of a set-up position cannot be read off a board, and X-FEN
//! `KQkq` and Shredder-FEN `HAha` castling fields are both fine.
//! - Irregularities: `irregularity` events as `(code, ply)` pairs against `irregularities`
//!   (every code, including `board_reversed`).
//! - Determinism, and what happens on bad input.
//!
//! Every folder test checks every file in it and reports all failing files in one panic message.

use std::{
    collections::{BTreeMap, BTreeSet},
    ffi::OsString,
    fs,
    io::{self, Read},
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use serde::Deserialize;
use serde_json::Value;
use shakmaty::{CastlingMode, Chess, fen::Fen};

mod support;

use pgn_reader::SanPlus;
use support::pgn::parse_pgn;

/// The binary under test, built by cargo for this test target.
const BIN: &str = env!("CARGO_BIN_EXE_eboardd");

/// A replay of one sample capture takes milliseconds; this only stops a hung binary from hanging
/// the test run.
const TIMEOUT: Duration = Duration::from_secs(120);

const STANDARD_START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

const SEVEN_TAG_ROSTER: [&str; 7] = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];

// ---------------------------------------------------------------------------------------------
// Sample captures and their truth

/// `gNNNN.truth.json`.
#[derive(Debug, Deserialize)]
struct Truth {
    /// The moves the replay must print, in SAN.
    sans: Vec<String>,
    /// `[code, ply]`: ply of the turn in which it happened; 0 for `board_reversed`.
    irregularities: Vec<(String, u32)>,
    /// `1-0`, `0-1`, `1/2-1/2` when the game ended on the board (mate, stalemate), else `*`.
    result: String,
    chess960: bool,
    start_fen: String,
    /// `{ply: seconds}`: the mover's time as the clock showed it right after the press that
    /// completed that move (what `[%clk]` must say, within a second).
    #[serde(default)]
    clk: BTreeMap<u32, u32>,
}

/// The captures of one folder, sorted by name, each with its truth.
fn cases(folder: &str) -> Vec<(PathBuf, Truth)> {
    let dir = support::data("captures").join(folder);
    let mut captures: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    captures.sort();
    assert!(!captures.is_empty(), "no captures in {}", dir.display());
    captures
        .into_iter()
        .map(|capture| {
            let truth_path = capture.with_extension("truth.json");
            let text = fs::read_to_string(&truth_path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", truth_path.display()));
            let truth: Truth = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("bad truth file {}: {e}", truth_path.display()));
            (capture, truth)
        })
        .collect()
}

/// `folder/gNNNN.jsonl`, for messages.
fn name(capture: &Path) -> String {
    let file = capture.file_name().unwrap_or_default().to_string_lossy();
    match capture.parent().and_then(Path::file_name) {
        Some(folder) => format!("{}/{file}", folder.to_string_lossy()),
        None => file.into_owned(),
    }
}

/// Panics with every failure, one per line, if there are any.
fn report(what: &str, failures: Vec<String>, total: usize) {
    if !failures.is_empty() {
        panic!(
            "{what}: {} of {total} captures failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Running the binary

struct Run {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Exit status and the start of stderr, for failure messages.
    fn why(&self) -> String {
        let stderr = self.stderr.trim();
        let cut: String = stderr.chars().take(300).collect();
        format!("exit {}; stderr: {cut:?}", self.status)
    }
}

/// Runs `eboardd ARGS...` with no stdin, collecting stdout and stderr, killed after [`TIMEOUT`].
fn eboardd<I, S>(args: I) -> Result<Run, String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let shown = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new(BIN)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {BIN}: {e}"))?;
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        out.read_to_end(&mut buf).map(|_| buf)
    });
    let err_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        err.read_to_end(&mut buf).map(|_| buf)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("waiting for eboardd: {e}"))?
        {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "`eboardd {shown}` did not finish within {TIMEOUT:?}"
            ));
        }
        thread::sleep(Duration::from_millis(5));
    };
    let join = |h: thread::JoinHandle<io::Result<Vec<u8>>>| {
        h.join()
            .map_err(|_| "reader thread panicked".to_string())?
            .map_err(|e| format!("reading eboardd's output: {e}"))
    };
    let stdout = join(out_reader)?;
    let stderr = String::from_utf8_lossy(&join(err_reader)?).into_owned();
    Ok(Run {
        status,
        stdout,
        stderr,
    })
}

/// `eboardd replay [--events] FILE`, which must succeed.
fn replay(capture: &Path, events: bool) -> Result<Run, String> {
    let mut args: Vec<OsString> = vec!["replay".into()];
    if events {
        args.push("--events".into());
    }
    args.push(capture.into());
    let run = eboardd(args)?;
    if run.status.success() {
        Ok(run)
    } else {
        Err(format!(
            "`replay{}` failed: {}",
            if events { " --events" } else { "" },
            run.why()
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// PGN

/// Whether two FENs give the same position: placement, side to move, castling rights (X-FEN
/// `KQkq` and Shredder `HAha` alike) and en passant square. The move counters are left out: a
/// set-up position read off a board cannot know them.
fn same_position(got: &str, want: &str) -> bool {
    let parse = |fen: &str| Fen::from_ascii(fen.as_bytes()).map(Fen::into_setup);
    match (parse(got), parse(want)) {
        (Ok(a), Ok(b)) => {
            a.board == b.board
                && a.turn == b.turn
                && a.castling_rights == b.castling_rights
                && a.ep_square == b.ep_square
        }
        _ => false,
    }
}

/// Whether `s` is `h:mm:ss` (hours of any length).
fn is_clk(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 3
        && !parts[0].is_empty()
        && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
        && parts[1].len() == 2
        && parts[2].len() == 2
}

/// Seconds of an `h:mm:ss` value checked by [`is_clk`].
fn clk_seconds(s: &str) -> u32 {
    s.split(':')
        .fold(0, |acc, p| acc * 60 + p.parse::<u32>().unwrap_or(0))
}

/// Checks the PGN printed for one capture against its truth; the reason on the first mismatch.
fn check_pgn(pgn: &[u8], truth: &Truth) -> Result<(), String> {
    let games = parse_pgn(pgn)?;
    let [game] = games.as_slice() else {
        return Err(format!("expected 1 game in the PGN, got {}", games.len()));
    };

    let missing: Vec<&str> = SEVEN_TAG_ROSTER
        .iter()
        .copied()
        .filter(|t| game.tag(t).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(format!("Seven Tag Roster incomplete, missing {missing:?}"));
    }
    if truth.chess960 || truth.start_fen != STANDARD_START {
        if truth.chess960 && game.tag("Variant") != Some("Chess960") {
            return Err(format!(
                "Chess960 game: want [Variant \"Chess960\"], got {:?}",
                game.tag("Variant")
            ));
        }
        if game.tag("SetUp") != Some("1") {
            return Err(format!("want [SetUp \"1\"], got {:?}", game.tag("SetUp")));
        }
        if !game
            .tag("FEN")
            .is_some_and(|fen| same_position(fen, &truth.start_fen))
        {
            return Err(format!(
                "want [FEN {:?}], got {:?}",
                truth.start_fen,
                game.tag("FEN")
            ));
        }
    }

    // The main line: exactly the truth's SANs, and legal from the start position.
    let got: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    if let Some(i) = (0..got.len().max(truth.sans.len()))
        .find(|&i| got.get(i).copied() != truth.sans.get(i).map(String::as_str))
    {
        let from = i.saturating_sub(3);
        return Err(format!(
            "first difference at ply {}: got {:?}, want {:?} (got {} plies, want {}; \
             got around it {:?}, want {:?})",
            i + 1,
            got.get(i),
            truth.sans.get(i),
            got.len(),
            truth.sans.len(),
            &got[from.min(got.len())..(i + 3).min(got.len())],
            &truth.sans[from.min(truth.sans.len())..(i + 3).min(truth.sans.len())],
        ));
    }
    let mode = if game
        .tag("Variant")
        .is_some_and(|v| v.eq_ignore_ascii_case("chess960"))
    {
        CastlingMode::Chess960
    } else {
        CastlingMode::Standard
    };
    let mut pos: Chess = match game.tag("FEN") {
        Some(fen) => Fen::from_ascii(fen.as_bytes())
            .map_err(|e| format!("bad FEN tag {fen:?}: {e}"))?
            .into_position(mode)
            .map_err(|e| format!("FEN tag {fen:?} is not a legal position: {e}"))?,
        None => Chess::default(),
    };
    for (i, m) in game.moves.iter().enumerate() {
        let san: SanPlus = m
            .san
            .parse()
            .map_err(|e| format!("ply {}: cannot parse {:?}: {e}", i + 1, m.san))?;
        let mv = san
            .san
            .to_move(&pos)
            .map_err(|e| format!("ply {}: {:?} is not legal here: {e}", i + 1, m.san))?;
        let canonical = SanPlus::from_move_and_play_unchecked(&mut pos, mv).to_string();
        if canonical != m.san {
            return Err(format!(
                "ply {}: printed {:?}, the correct SAN is {canonical:?}",
                i + 1,
                m.san
            ));
        }
        let ply = i as u32 + 1;
        let mut clk = None;
        for c in &m.comments {
            if let Some(rest) = c.split("[%clk ").nth(1) {
                let value = rest.split(']').next().unwrap_or_default().trim();
                if !is_clk(value) {
                    return Err(format!("ply {ply}: bad clock comment {c:?}"));
                }
                clk = Some(clk_seconds(value));
            }
        }
        if let Some(&want) = truth.clk.get(&ply) {
            match clk {
                Some(got) if got.abs_diff(want) <= 1 => {}
                got => {
                    return Err(format!(
                        "ply {ply} ({}): [%clk] {got:?} s, the clock showed {want} s",
                        m.san
                    ));
                }
            }
        }
    }

    if truth.result != "*" && game.tag("Result") != Some(truth.result.as_str()) {
        return Err(format!(
            "Result tag: got {:?}, want {:?}",
            game.tag("Result"),
            truth.result
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Events

/// Parses `replay --events` output: one JSON object per line, `v` 1, `seq` increasing, and the
/// common fields present.
fn parse_events(stdout: &[u8]) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("events are not UTF-8: {e}"))?;
    let mut events = Vec::new();
    let mut last_seq: Option<u64> = None;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line_no = n + 1;
        let event: Value = serde_json::from_str(line)
            .map_err(|e| format!("event line {line_no} is not JSON ({e}): {line:.200}"))?;
        if event.get("v").and_then(Value::as_u64) != Some(1) {
            return Err(format!("event line {line_no}: want \"v\":1: {line:.200}"));
        }
        let seq = event
            .get("seq")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("event line {line_no}: no integer \"seq\": {line:.200}"))?;
        if last_seq.is_some_and(|last| seq <= last) {
            return Err(format!("event line {line_no}: seq {seq} does not increase"));
        }
        last_seq = Some(seq);
        for field in ["t", "board", "game", "kind"] {
            if event.get(field).is_none() {
                return Err(format!("event line {line_no}: no {field:?}: {line:.200}"));
            }
        }
        events.push(event);
    }
    Ok(events)
}

fn kind(event: &Value) -> &str {
    event
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The Chess960 start position number (Scharnagl) of a FEN's white back rank, if it is one.
fn chess960_number(fen: &str) -> Option<u32> {
    let rank1 = fen.split(' ').next()?.split('/').nth(7)?;
    let files: Vec<char> = rank1.chars().collect();
    if files.len() != 8 {
        return None;
    }
    let bishops: Vec<usize> = (0..8).filter(|&i| files[i] == 'B').collect();
    let [b1, b2] = bishops[..] else { return None };
    // a1 is dark: even files are dark squares, odd files light.
    let (dark, light) = if b1 % 2 == 0 { (b1, b2) } else { (b2, b1) };
    if dark % 2 != 0 || light % 2 != 1 {
        return None;
    }
    let rest: Vec<usize> = (0..8).filter(|&i| files[i] != 'B').collect();
    let queen = rest.iter().position(|&i| files[i] == 'Q')?;
    let rest: Vec<usize> = rest.into_iter().filter(|&i| files[i] != 'Q').collect();
    let knights: Vec<usize> = (0..5).filter(|&k| files[rest[k]] == 'N').collect();
    const KNIGHTS: [(usize, usize); 10] = [
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 3),
        (2, 4),
        (3, 4),
    ];
    let [n1, n2] = knights[..] else { return None };
    let knight_code = KNIGHTS.iter().position(|&k| k == (n1, n2))?;
    let others: String = rest
        .iter()
        .filter(|&&i| files[i] != 'N')
        .map(|&i| files[i])
        .collect();
    if others != "RKR" {
        return None;
    }
    Some((light / 2 + 4 * (dark / 2) + 16 * queen + 96 * knight_code) as u32)
}

/// Checks the events printed for one capture against its truth (game start only: moves are
/// checked through the PGN).
fn check_events(stdout: &[u8], truth: &Truth) -> Result<(), String> {
    let events = parse_events(stdout)?;
    let started = events
        .iter()
        .find(|e| kind(e) == "game_started")
        .ok_or("no game_started event")?;
    let fen = started.get("fen").and_then(Value::as_str);
    if !fen.is_some_and(|fen| same_position(fen, &truth.start_fen)) {
        return Err(format!(
            "game_started fen: got {fen:?}, want {:?}",
            truth.start_fen
        ));
    }
    match (started.get("chess960"), truth.chess960) {
        (None, false) => {}
        (Some(n), true) => {
            let want = chess960_number(&truth.start_fen);
            if n.as_u64() != want.map(u64::from) {
                return Err(format!(
                    "game_started chess960: got {n}, want start position number {want:?}"
                ));
            }
        }
        (Some(n), false) => {
            return Err(format!("game_started has chess960 {n} in a standard game"));
        }
        (None, true) => return Err("game_started lacks chess960 in a Chess960 game".into()),
    }
    Ok(())
}

/// `irregularity` events as `(code, ply)`.
///
/// The ply is the event's own `ply` field when it has one; otherwise the ply of the turn in
/// progress when it was raised: one more than the last `move_completed` ply of that game (so an
/// irregularity must come before the `move_completed` of its turn). `board_reversed` is raised
/// at set-up and always counts as ply 0, as in the truth files.
fn irregularities(events: &[Value]) -> BTreeSet<(String, u64)> {
    let mut found = BTreeSet::new();
    let mut completed: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for e in events {
        let game = (
            e.get("board")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            e.get("game").and_then(Value::as_u64).unwrap_or_default(),
        );
        match kind(e) {
            "move_completed" => {
                if let Some(ply) = e.get("ply").and_then(Value::as_u64) {
                    completed.insert(game, ply);
                }
            }
            "irregularity" => {
                let code = e
                    .get("code")
                    .and_then(Value::as_str)
                    .unwrap_or("<no code>")
                    .to_owned();
                let ply = if code == "board_reversed" {
                    0
                } else {
                    e.get("ply")
                        .and_then(Value::as_u64)
                        .unwrap_or_else(|| completed.get(&game).copied().unwrap_or(0) + 1)
                };
                found.insert((code, ply));
            }
            _ => {}
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// The tests' bodies

/// PGN and game start of every capture in `folder`.
fn golden(folder: &str) {
    let cases = cases(folder);
    let mut failures = Vec::new();
    for (capture, truth) in &cases {
        let pgn = replay(capture, false).and_then(|run| check_pgn(&run.stdout, truth));
        let events = replay(capture, true).and_then(|run| check_events(&run.stdout, truth));
        let problems: Vec<String> = [pgn.err(), events.err()].into_iter().flatten().collect();
        if !problems.is_empty() {
            failures.push(format!("{}: {}", name(capture), problems.join("; ")));
        }
    }
    report(&format!("golden {folder}"), failures, cases.len());
}

/// `irregularity` events of every capture in `folder`, restricted to the codes `only` selects.
fn golden_irregularities(folder: &str, only: impl Fn(&str) -> bool) {
    let cases = cases(folder);
    let mut failures = Vec::new();
    for (capture, truth) in &cases {
        let got = match replay(capture, true).and_then(|run| parse_events(&run.stdout)) {
            Ok(events) => irregularities(&events),
            Err(e) => {
                failures.push(format!("{}: {e}", name(capture)));
                continue;
            }
        };
        let got: BTreeSet<(String, u64)> = got.into_iter().filter(|(c, _)| only(c)).collect();
        let want: BTreeSet<(String, u64)> = truth
            .irregularities
            .iter()
            .filter(|(c, _)| only(c))
            .map(|(c, p)| (c.clone(), u64::from(*p)))
            .collect();
        if got != want {
            let missing: Vec<_> = want.difference(&got).collect();
            let extra: Vec<_> = got.difference(&want).collect();
            failures.push(format!(
                "{}: (code, ply) missing {missing:?}, unexpected {extra:?}",
                name(capture)
            ));
        }
    }
    report(&format!("irregularities {folder}"), failures, cases.len());
}

fn all_irregularities(folder: &str) {
    golden_irregularities(folder, |_| true);
}

fn board_reversed(folder: &str) {
    golden_irregularities(folder, |code| code == "board_reversed");
}

// ---------------------------------------------------------------------------------------------
// Tests: moves, result and start position

#[test]
fn golden_clean() {
    golden("clean");
}

#[test]
fn golden_human() {
    golden("human");
}

#[test]
fn golden_blitz() {
    golden("blitz");
}

#[test]
fn golden_chess960() {
    golden("chess960");
}

#[test]
fn golden_irregular() {
    golden("irregular");
}

#[test]
fn golden_irregular_promotion() {
    golden("irregular-promotion");
}

// ---------------------------------------------------------------------------------------------
// Tests: reversed boards (core)

#[test]
fn board_reversed_clean() {
    board_reversed("clean");
}

#[test]
fn board_reversed_human() {
    board_reversed("human");
}

#[test]
fn board_reversed_blitz() {
    board_reversed("blitz");
}

#[test]
fn board_reversed_chess960() {
    board_reversed("chess960");
}

#[test]
fn board_reversed_irregular() {
    board_reversed("irregular");
}

#[test]
fn board_reversed_irregular_promotion() {
    board_reversed("irregular-promotion");
}

// ---------------------------------------------------------------------------------------------
// Tests: every irregularity (issue 3)

#[test]
fn irregularities_clean() {
    all_irregularities("clean");
}

#[test]
fn irregularities_human() {
    all_irregularities("human");
}

#[test]
fn irregularities_blitz() {
    all_irregularities("blitz");
}

#[test]
fn irregularities_chess960() {
    all_irregularities("chess960");
}

#[test]
fn irregularities_irregular() {
    all_irregularities("irregular");
}

#[test]
fn irregularities_irregular_promotion() {
    all_irregularities("irregular-promotion");
}

// ---------------------------------------------------------------------------------------------
// Tests: determinism

#[test]
fn replay_is_deterministic() {
    let folders = [
        "clean",
        "human",
        "blitz",
        "chess960",
        "irregular",
        "irregular-promotion",
    ];
    let mut failures = Vec::new();
    for folder in folders {
        let (capture, _) = cases(folder).swap_remove(0);
        for events in [true, false] {
            let first = replay(&capture, events);
            let second = replay(&capture, events);
            let what = if events { "replay --events" } else { "replay" };
            match (first, second) {
                (Ok(a), _) if a.stdout.is_empty() => {
                    failures.push(format!("{}: `{what}` printed nothing", name(&capture)));
                }
                (Ok(a), Ok(b)) if a.stdout == b.stdout => {}
                (Ok(a), Ok(b)) => {
                    let (a, b) = (a.stdout_text(), b.stdout_text());
                    let line = a
                        .lines()
                        .zip(b.lines())
                        .position(|(x, y)| x != y)
                        .unwrap_or_else(|| a.lines().count().min(b.lines().count()));
                    failures.push(format!(
                        "{}: two runs of `{what}` differ from line {}: {:?} vs {:?}",
                        name(&capture),
                        line + 1,
                        a.lines().nth(line),
                        b.lines().nth(line)
                    ));
                }
                (Err(e), _) | (_, Err(e)) => failures.push(format!("{}: {e}", name(&capture))),
            }
        }
    }
    report("determinism", failures, folders.len());
}

// ---------------------------------------------------------------------------------------------
// Tests: bad input

/// A file of this test's own in cargo's scratch folder for integration tests.
fn scratch_file(file_name: &str, contents: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(file_name);
    fs::write(&path, contents).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// `replay FILE` must fail with one line on stderr that names the file; returns that line.
fn assert_rejected(path: &Path) -> String {
    let run = eboardd([OsString::from("replay"), path.into()]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !run.status.success(),
        "replay of bad input {} exited 0; stdout: {:.300}",
        path.display(),
        run.stdout_text()
    );
    let stderr = run.stderr.trim();
    assert_eq!(
        stderr.lines().count(),
        1,
        "want a one-line reason on stderr, got: {stderr:?}"
    );
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    assert!(
        stderr.contains(file_name.as_ref()),
        "the reason does not name the file {file_name}: {stderr:?}"
    );
    stderr.to_owned()
}

#[test]
fn replay_rejects_a_file_that_is_not_a_capture() {
    let path = scratch_file(
        "golden-not-a-capture.pgn",
        "[Event \"?\"]\n\n1. e4 e5 2. Nf3 *\n",
    );
    assert_rejected(&path);
}

#[test]
fn replay_rejects_a_missing_file() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-no-such-capture.jsonl");
    let _ = fs::remove_file(&path);
    assert_rejected(&path);
}

#[test]
fn replay_of_a_directory_without_captures_says_so() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-empty-capture-dir");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create dir");
    fs::write(dir.join("notes.txt"), "not a capture\n").expect("write");
    let reason = assert_rejected(&dir);
    assert!(reason.contains("no capture files"), "{reason:?}");
}

#[test]
fn replay_skips_a_record_without_dev_names_the_line_and_keeps_the_rest() {
    let path = scratch_file(
        "golden-record-without-dev.jsonl",
        "{\"format\":\"eboard-capture\",\"version\":1}\n\
         {\"t\":0.0,\"tx\":\"42\"}\n\
         {\"t\":0.1,\"dev\":\"board-1\",\"note\":\"after the bad line\"}\n",
    );
    let run = eboardd([
        OsString::from("replay"),
        OsString::from("--events"),
        path.clone().into(),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.status.success(), "{}", run.why());
    let warning = run
        .stderr
        .lines()
        .find(|l| l.contains("golden-record-without-dev.jsonl:2"))
        .unwrap_or_else(|| panic!("no warning naming line 2: {:?}", run.stderr));
    assert!(warning.contains("no \"dev\""), "{warning}");
    assert!(warning.contains("line skipped"), "{warning}");
}

#[test]
fn replay_accepts_a_cut_off_last_line() {
    let (capture, truth) = cases("clean").swap_remove(0);
    let mut text = fs::read_to_string(&capture).expect("read capture");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("{\"t\": 99999.0, \"dev\": \"board-1\", \"rx\": \"8e00");
    let path = scratch_file("golden-cut-off-last-line.jsonl", &text);
    let run = replay(&path, false).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if let Err(e) = check_pgn(&run.stdout, &truth) {
        panic!("{} with a cut-off line appended: {e}", name(&capture));
    }
}

// ---------------------------------------------------------------------------------------------
// Tests of the helpers themselves

#[test]
fn helper_chess960_numbers() {
    assert_eq!(chess960_number(STANDARD_START), Some(518));
    assert_eq!(
        chess960_number("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"),
        Some(0)
    );
    assert_eq!(
        chess960_number("rkrnnqbb/pppppppp/8/8/8/8/PPPPPPPP/RKRNNQBB w KQkq - 0 1"),
        Some(959)
    );
    assert_eq!(
        chess960_number("krbqnbnr/pppppppp/8/8/8/8/PPPPPPPP/KRBQNBNR w - - 0 1"),
        None
    );
}

#[test]
fn helper_pgn_check_accepts_a_correct_game() {
    let truth = Truth {
        sans: ["f3", "e5", "g4", "Qh4#"].map(String::from).to_vec(),
        irregularities: Vec::new(),
        result: "0-1".into(),
        chess960: false,
        start_fen: STANDARD_START.into(),
        clk: BTreeMap::from([(1, 5400), (2, 5399)]),
    };
    let pgn = "[Event \"?\"]\n[Site \"?\"]\n[Date \"????.??.??\"]\n[Round \"?\"]\n\
               [White \"?\"]\n[Black \"?\"]\n[Result \"0-1\"]\n\n\
               1. f3 { [%clk 1:30:00] } e5 { [%clk 1:29:58] } 2. g4 Qh4# { made } 0-1\n";
    check_pgn(pgn.as_bytes(), &truth).expect("valid PGN");
    let wrong = pgn.replace("Qh4#", "Qh4");
    let err = check_pgn(wrong.as_bytes(), &truth).expect_err("Qh4 is not Qh4#");
    assert!(err.contains("ply 4"), "{err}");
    // The clock check: a [%clk] more than a second off the truth (the opponent's face, say).
    let swapped = pgn.replace("1:29:58", "1:29:20");
    let err = check_pgn(swapped.as_bytes(), &truth).expect_err("ply 2's clock is off");
    assert!(err.contains("ply 2") && err.contains("clk"), "{err}");
}

#[test]
fn helper_same_position() {
    let x_fen = "rknqbbrn/pppppppp/8/8/8/8/PPPPPPPP/RKNQBBRN w KQkq - 0 1";
    assert!(same_position(x_fen, x_fen));
    assert!(same_position(
        "rknqbbrn/pppppppp/8/8/8/8/PPPPPPPP/RKNQBBRN w GAga - 0 1",
        x_fen
    ));
    assert!(same_position(
        "rknqbbrn/pppppppp/8/8/8/8/PPPPPPPP/RKNQBBRN w KQkq - 3 17",
        x_fen
    ));
    assert!(!same_position(
        "rknqbbrn/pppppppp/8/8/8/8/PPPPPPPP/RKNQBBRN b KQkq - 0 1",
        x_fen
    ));
    assert!(!same_position(
        "rknqbbrn/pppppppp/8/8/8/8/PPPPPPPP/RKNQBBRN w Kkq - 0 1",
        x_fen
    ));
    assert!(!same_position("not a fen", x_fen));
}
