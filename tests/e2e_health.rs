//! What the hall sees is true (issue 39), end to end with the real binary:
//!
//! - health (`GET /api/v1/health`) is not `ok` while a configured part fails, and `failing`
//!   names it with its reason: configured ports that cannot open (a regular file, a directory,
//!   `/dev/null`, a missing node), a capture directory that cannot be written, an MQTT broker
//!   that cannot be reached; `/metrics` counts them (`eboardd_failing{part}`) and the arbiter
//!   page lists them (headless Chromium); a port that can never work is one warning in the
//!   log, not an INFO line retried for ever;
//! - a port with a family prefix in the wrong case is a configuration error at start;
//! - `eboardd check` names the line of a typo (exit 1), the ports that are no serial ports,
//!   and says OK (exit 0) for a good file;
//! - a second daemon on one capture directory is refused at start, naming the directory and
//!   the first daemon's pid; the lock of a killed daemon does not block the next.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::daemon::*;
use support::http::{free_port, local, try_get};

const WAIT: Duration = Duration::from_secs(30);

/// Polls health until `pred` holds; panics with the last answer and the log after [`WAIT`].
async fn health_until(http: u16, log: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        if let Some(r) = try_get(local(http), "/api/v1/health")
            && let Ok(v) = serde_json::from_str::<Value>(&r.body)
        {
            if pred(&v) {
                return v;
            }
            last = v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "health never showed {what}: {last}\nlog:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// The `failing` entries of `part` in a health answer.
fn failing<'a>(h: &'a Value, part: &str) -> Vec<&'a Value> {
    h["failing"]
        .as_array()
        .map(|a| a.iter().filter(|f| f["part"] == part).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ports_that_cannot_open_are_failing_parts_with_their_reasons() {
    let dir = scratch("health-ports");
    let file = dir.join("not-a-port.txt");
    std::fs::write(&file, "x").unwrap();
    let folder = dir.join("a-directory");
    std::fs::create_dir_all(&folder).unwrap();
    let missing = dir.join("eboard-99999");
    let ports: Vec<PathBuf> = vec![
        file.clone(),
        folder.clone(),
        PathBuf::from("/dev/null"),
        missing.clone(),
    ];
    let http = free_port();
    let addr = format!("127.0.0.1:{http}");
    let d = Daemon::start(&ports, &dir.join("captures"), &["--http", &addr]);
    let h = health_until(http, &d.log, "four failing ports", |h| {
        failing(h, "port").len() == 4
    })
    .await;
    assert_eq!(h["ok"], false, "{h}");
    assert_eq!(h["state"], "ready", "{h}");
    let reason = |p: &Path| {
        failing(&h, "port")
            .into_iter()
            .find(|f| f["name"] == p.display().to_string())
            .and_then(|f| f["reason"].as_str())
            .unwrap_or_else(|| panic!("{}: not failing: {h}", p.display()))
            .to_string()
    };
    assert!(reason(&file).starts_with("a regular file, not a serial port"));
    assert!(reason(&folder).starts_with("a directory, not a serial port"));
    assert!(reason(Path::new("/dev/null")).contains("no terminal (tty)"));
    assert!(reason(&missing).contains("No such file or directory"));
    let metrics = try_get(local(http), "/metrics").expect("metrics").body;
    assert!(
        metrics.contains("eboardd_failing{part=\"port\"} 4"),
        "{metrics}"
    );
    // The three that waiting cannot heal: one warning each, saying what to do; the missing
    // one (a board not plugged in yet) is information.
    let log = std::fs::read_to_string(&d.log).unwrap();
    for p in [&file, &folder, &PathBuf::from("/dev/null")] {
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(&format!("{}: cannot open", p.display())))
            .collect();
        assert_eq!(lines.len(), 1, "{}: {lines:?}", p.display());
        assert!(
            lines[0].contains("WARN") && lines[0].contains("tried again every 30 s"),
            "{}",
            lines[0]
        );
    }
    // The arbiter page lists them, each with its reason.
    let Some(chromium) = support::chromium::chromium() else {
        return;
    };
    let (url, profile) = (format!("http://{addr}/"), dir.join("profile"));
    let dom = tokio::task::spawn_blocking(move || {
        support::chromium::run_chromium(&chromium, &profile, &url, &["--dump-dom"])
    })
    .await
    .unwrap();
    let dom = support::chromium::rendered(dom);
    let list = dom
        .split_once("<ul id=\"failing\"")
        .and_then(|(_, rest)| rest.split_once("</ul>"))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("no failing list on the page: {dom}"));
    assert!(
        !list.starts_with(" title=\"GET /api/v1/health: failing\" hidden"),
        "{list}"
    );
    assert_eq!(list.matches("<li>").count(), 4, "{list}");
    assert!(
        list.contains("<b>Port /dev/null: </b>a mem device that is no terminal"),
        "{list}"
    );
    d.terminate();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_directory_that_cannot_be_written_and_an_unreachable_broker_are_failing() {
    let dir = scratch("health-capture");
    // The capture directory is a regular file: nothing can be written there.
    let caps = dir.join("captures");
    std::fs::write(&caps, "x").unwrap();
    // A localhost port nobody listens on.
    let closed = free_port();
    let broker = format!("mqtt://127.0.0.1:{closed}");
    let http = free_port();
    let addr = format!("127.0.0.1:{http}");
    let d = Daemon::start(&[], &caps, &["--http", &addr, "--mqtt", &broker]);
    let h = health_until(http, &d.log, "the capture directory and the broker", |h| {
        !failing(h, "capture").is_empty() && !failing(h, "mqtt").is_empty()
    })
    .await;
    assert_eq!(h["ok"], false, "{h}");
    let capture = failing(&h, "capture")[0];
    assert_eq!(capture["name"], caps.display().to_string(), "{h}");
    assert!(
        capture["reason"]
            .as_str()
            .is_some_and(|r| r.contains("cannot be written") && r.contains("not a directory")),
        "{h}"
    );
    let mqtt = failing(&h, "mqtt")[0];
    assert_eq!(mqtt["name"], format!("127.0.0.1:{closed}"), "{h}");
    assert!(
        mqtt["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("not reachable")),
        "{h}"
    );
    let metrics = try_get(local(http), "/metrics").expect("metrics").body;
    for part in ["capture", "mqtt"] {
        assert!(
            metrics.contains(&format!("eboardd_failing{{part=\"{part}\"}} 1")),
            "{metrics}"
        );
    }
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("MQTT broker not reachable")),
        "{log}"
    );
    d.terminate();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `eboardd run` with `args`, expected to end by itself: (exit code, standard error).
fn run_to_end(args: &[&str]) -> (Option<i32>, String) {
    let child = Command::new(bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, WAIT);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The child's output once it has ended; killed (and the test failed) after `timeout`.
fn wait_output(child: std::process::Child, timeout: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("pid {pid} did not end within {timeout:?}");
        }
    }
}

#[test]
fn a_family_prefix_in_the_wrong_case_is_a_configuration_error_at_start() {
    let dir = scratch("health-prefix");
    let caps = dir.join("captures").display().to_string();
    let (code, err) = run_to_end(&[
        "run",
        "--no-discovery",
        "--http",
        "off",
        "--capture-dir",
        &caps,
        "--port",
        "DGT:/dev/ttyACM0",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown board family \"DGT\"") && err.contains("lower case: dgt:"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `eboardd check --config FILE`: (exit code, standard output, standard error).
fn check(config: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin())
        .args(["check", "--config"])
        .arg(config)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn check_names_the_line_of_a_typo_and_the_ports_that_are_no_serial_ports() {
    let dir = scratch("health-check");
    let caps = dir.join("captures");
    let file = dir.join("eboardd.toml");
    let good = format!(
        "[event]\nname = \"Open\"\n\n[daemon]\ncapture_dir = {:?}\nports = [{:?}]\n",
        caps.display().to_string(),
        dir.join("eboard-12345").display().to_string()
    );
    std::fs::write(&file, &good).unwrap();
    let (code, out, err) = check(&file);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.trim().ends_with("OK"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    // The port not plugged in yet is noted, not a problem.
    assert!(
        err.contains("note:") && err.contains("eboard-12345"),
        "{err}"
    );
    assert!(!caps.exists(), "check made the capture directory");

    std::fs::write(&file, good.replace("capture_dir", "captur_dir")).unwrap();
    let (code, out, err) = check(&file);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&file.display().to_string())
            && err.contains("line 5")
            && err.contains("captur_dir"),
        "{err}"
    );

    let tokens = dir.join("missing.token");
    let bad = format!(
        "[daemon]\ncapture_dir = {:?}\nports = [{:?}, \"/dev/null\"]\n\n[outputs]\ntoken_file = {:?}\n",
        dir.join("file").join("captures").display().to_string(),
        dir.display().to_string(),
        tokens.display().to_string()
    );
    std::fs::write(dir.join("file"), "x").unwrap();
    std::fs::write(&file, bad).unwrap();
    let (code, _, err) = check(&file);
    assert_eq!(code, Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines.iter().any(|l| l.contains("token file")), "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("a directory, not a serial port")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/dev/null") && l.contains("no terminal")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("capture directory") && l.contains("is not a directory")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits until `pid` has started serving (its log says so): it holds its capture directory.
fn wait_serving(d: &Daemon) {
    let deadline = Instant::now() + WAIT;
    while !std::fs::read_to_string(&d.log).is_ok_and(|l| l.contains("serving 0 port(s)")) {
        assert!(Instant::now() < deadline, "pid {} never started", d.pid());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_daemon_on_one_capture_directory_is_refused() {
    let dir = scratch("health-lock");
    let caps = dir.join("captures");
    let first = Daemon::start(&[], &caps, &[]);
    wait_serving(&first);
    let caps_text = caps.display().to_string();
    let (code, err) = run_to_end(&[
        "run",
        "--no-discovery",
        "--http",
        "off",
        "--capture-dir",
        &caps_text,
    ]);
    assert_eq!(code, Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(
        line.contains(&caps_text) && line.contains(&format!("pid {}", first.pid())),
        "{line}"
    );
    // Nothing is added to the capture directory (its day folders, round and archive only).
    assert!(
        std::fs::read_dir(&caps)
            .unwrap()
            .all(|e| e.unwrap().path().is_dir()),
        "a file in the capture directory"
    );
    // The lock dies with a daemon that was killed.
    first.kill9();
    let third = Daemon::start(&[], &caps, &[]);
    wait_serving(&third);
    third.terminate();
    let _ = std::fs::remove_dir_all(&dir);
}
