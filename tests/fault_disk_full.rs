//! Fault injection: the capture directory's disk fills up in the middle of a game. The daemon
//! must say so clearly in its log, keep serving the board (every move still reaches the event
//! stream), and lose nothing it had already captured: the capture replays to the moves completed
//! before the disk filled.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

/// A tiny tmpfs mounted on a directory, unmounted on drop (even when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount tmpfs on {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Something still holds it open: detach it anyway.
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Whether the test can mount a tmpfs; when it cannot, skip outside CI and fail in CI.
fn can_mount() -> bool {
    // `/proc/self` belongs to the process's effective user.
    if std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0) {
        return true;
    }
    let msg = "fault_disk_full needs root (it mounts a tmpfs)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}

/// Fills the file system holding `dir` until a write fails with ENOSPC.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(nix::libc::ENOSPC), "filling: {e}");
                break;
            }
        }
    }
    // Smaller writes too, so not a byte is left.
    while let Ok(1) = f.write(&[0u8]) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_mid_game_is_reported_and_loses_nothing_captured() {
    if !can_mount() {
        return;
    }
    let Single {
        dir,
        caps,
        game: g,
        link,
        board: b,
        id,
    } = single("diskfull", 5, 34000, SPEED, None);
    let id = id.as_str();
    let mnt = Tmpfs::mount(&caps, "128k");
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &[]);
    d.wait_for("ply 8 to be completed", WAIT, |ev| completed(ev, id, 8))
        .await;
    fill(&caps);
    let seen = {
        let ev = d.events.lock().unwrap();
        completed_plies(&ev, id)
    };
    // The capture writes now fail (once the last page the file system gave the capture is
    // used): the daemon says so and goes on serving the board to the end of the game.
    let last = g.moves.len();
    let log_path = d.log.clone();
    d.wait_for("the game's last move", WAIT, |ev| made(ev, id, last))
        .await;
    {
        let ev = d.events.lock().unwrap();
        assert_eq!(
            moves_from_events(&ev, id),
            uci(&g),
            "{id}: the event stream after the disk filled"
        );
    }
    d.terminate();
    stop_strict(b, id).await;
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        log.contains("capture write failed") && log.contains("No space left on device"),
        "no clear error about the full disk in the log:\n{log}"
    );
    assert!(
        !log.contains("link lost: capture"),
        "a capture error must not take the board out of service:\n{log}"
    );
    // Nothing captured before the disk filled is lost.
    std::fs::remove_file(caps.join("filler")).unwrap();
    let pgn = replay(&caps);
    let got = games_by_board(&pgn);
    let games: Vec<&_> = got
        .iter()
        .filter(|(b, _)| b == id)
        .map(|(_, g)| g)
        .collect();
    assert_eq!(
        games.len(),
        1,
        "{id}: {} games in the replay:\n{pgn}",
        games.len()
    );
    let replayed = san(games[0]);
    let want = san(&g);
    assert!(
        replayed.len() >= seen,
        "{} plies replayed, {seen} were completed before the disk filled:\n{pgn}",
        replayed.len()
    );
    assert_eq!(
        replayed[..],
        want[..replayed.len()],
        "moves differ in the replay"
    );
    drop(mnt);
    let _ = std::fs::remove_dir_all(&dir);
}
