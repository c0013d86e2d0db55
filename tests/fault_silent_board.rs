//! Fault injection: a board that goes silent without its port going away (a frozen board, or a
//! cable fault that keeps the USB device). A relay between the daemon and the emulated board
//! stops passing bytes both ways while the pty stays open. The daemon must notice the dead link
//! (`board_disconnected`), and once the board answers again the game must go on, exact.

mod e2e_support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use e2e_support::*;
use eboardd::sim::emulator::runner::Control;
use eboardd::sim::pty::Pty;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_board_is_noticed_and_the_game_goes_on_exact() {
    let s = single("silent", 3, 35000, SPEED, None);
    let id = s.id.clone();
    let id = id.as_str();
    // The daemon's side of the relay.
    let host = Arc::new(Pty::open().unwrap());
    let board_rw = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&s.link)
        .unwrap();
    let mut board_r = board_rw.try_clone().unwrap();
    let mut board_w = board_rw;
    let frozen = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    // Host → board.
    let (h, f) = (host.clone(), frozen.clone());
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            match h.read(&mut buf).await {
                Ok(n) if n > 0 => {
                    if !f.load(Ordering::SeqCst) {
                        let _ = board_w.write_all(&buf[..n]);
                    }
                }
                // No one has the port open (the daemon is reopening it): try again shortly.
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    // Board → host.
    let (h, f, st) = (host.clone(), frozen.clone(), stop.clone());
    let down = std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        while !st.load(Ordering::SeqCst) {
            match board_r.read(&mut buf) {
                Ok(n) if n > 0 => {
                    if !f.load(Ordering::SeqCst) {
                        let _ = h.write_now(&buf[..n]);
                    }
                }
                _ => break,
            }
        }
    });

    let cfg = s.dir.join("eboardd.toml");
    std::fs::write(&cfg, "[daemon]\nkeepalive_secs = 1\n").unwrap();
    let cfg_arg = cfg.to_string_lossy().to_string();
    let port = host.path().to_path_buf();
    let mut d = Daemon::start(&[port], &s.caps, &["--config", &cfg_arg]);
    d.wait_for("ply 10 to be completed", WAIT, |ev| completed(ev, id, 10))
        .await;
    // The players wait for the board to come back; the board goes silent.
    s.board.send(Control::Hold { plies: 0 });
    frozen.store(true, Ordering::SeqCst);
    let before = d.events.lock().unwrap().len();
    d.wait_for("the dead link to be noticed", WAIT, |ev| {
        !of(&ev[before.min(ev.len())..], id, "board_disconnected").is_empty()
    })
    .await;
    frozen.store(false, Ordering::SeqCst);
    s.wait_done(&mut d, id).await;
    up.abort();
    stop.store(true, Ordering::SeqCst);
    let log = s.finish(d, id);
    // The relay's reader ends when the board's pty goes away (not waited for).
    drop(down);
    assert!(
        log.contains("silent for"),
        "no word of the dead link in the log:\n{log}"
    );
}
