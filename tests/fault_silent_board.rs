//! Fault injection: a board that goes silent without its port going away (a frozen board, or a
//! cable fault that keeps the USB device). A relay between the daemon and the emulated board
//! stops passing bytes both ways while the pty stays open. The daemon must notice the dead link
//! (`board_disconnected`), and once the board answers again the game must go on, exact.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eboardd::sim::emulator::runner::Control;
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_board_is_noticed_and_the_game_goes_on_exact() {
    let s = single("silent", 3, 35000, SPEED, None);
    let id = s.id.clone();
    let id = id.as_str();
    // The relay: no bytes either way while frozen.
    let frozen = Arc::new(AtomicBool::new(false));
    let (f_up, f_down) = (frozen.clone(), frozen.clone());
    let relay = Relay::start(
        &s.link,
        move |_| !f_up.load(Ordering::SeqCst),
        move |bytes| {
            if f_down.load(Ordering::SeqCst) {
                Vec::new()
            } else {
                bytes.to_vec()
            }
        },
    );

    let cfg = s.dir.join("eboardd.toml");
    std::fs::write(&cfg, "[daemon]\nkeepalive_secs = 1\n").unwrap();
    let cfg_arg = cfg.to_string_lossy().to_string();
    let port = relay.port();
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
    relay.stop();
    let log = s.finish(d, id).await;
    assert!(
        log.contains("silent for"),
        "no word of the dead link in the log:\n{log}"
    );
}
