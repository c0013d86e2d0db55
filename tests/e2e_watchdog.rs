//! End to end: under a service manager (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, as systemd sets them
//! for `Type=notify` with `WatchdogSec=`), the daemon says it is ready and feeds the watchdog
//! while its port task serves a board and makes progress (`src/daemon/heartbeat.rs`). The test
//! stands in for systemd: a datagram socket that the daemon writes its notifications to.

mod support;

use std::time::Duration;

use support::daemon::*;
use tokio::net::UnixDatagram;

/// How long the daemon may take to say anything (its start, the board's handshake).
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_is_fed_while_the_port_task_serves_its_board() {
    let one = single("watchdog", 2, 33200, 200.0, None);
    let path = one.dir.join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let notify = path.to_string_lossy().to_string();
    // An interval of 200 ms (half of WATCHDOG_USEC): many feeds while the game is played.
    let mut d = Daemon::start_env(
        std::slice::from_ref(&one.link),
        &one.caps,
        &[],
        &[("NOTIFY_SOCKET", &notify), ("WATCHDOG_USEC", "400000")],
    );
    let mut said: Vec<String> = Vec::new();
    let mut buf = vec![0u8; 4096];
    let fed = |said: &[String]| said.iter().filter(|s| s.contains("WATCHDOG=1")).count();
    // READY=1, then WATCHDOG=1 again and again while the board is served.
    while !(said.iter().any(|s| s.contains("READY=1")) && fed(&said) >= 5) {
        let n = tokio::time::timeout(WAIT, sock.recv(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("the daemon stopped notifying; it said {said:?}"))
            .unwrap();
        said.push(String::from_utf8_lossy(&buf[..n]).to_string());
    }
    let ready = said.iter().position(|s| s.contains("READY=1")).unwrap();
    let first_fed = said.iter().position(|s| s.contains("WATCHDOG=1")).unwrap();
    assert!(ready < first_fed, "{said:?}");
    // The board is served meanwhile: its game goes on to the end. The test reads no more
    // notifications, so the socket's queue fills: the daemon must neither block on it nor
    // fail to stop (its sends never block, `src/daemon/notify.rs`).
    one.wait_done(&mut d, &one.id).await;
    d.terminate();
    stop_strict(one.board, &one.id).await;
}
