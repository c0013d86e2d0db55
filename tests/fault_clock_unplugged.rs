//! Fault injection: the clock's cable is pulled in the middle of a game. A relay between the
//! daemon and the emulated board (a DGT 3000 on its cable) reports "no clock" once and passes no
//! clock message after that, as a board does when its clock goes. The moves must still be
//! recorded exactly: each completed by the next move instead of the clock press.

mod e2e_support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use e2e_support::*;
use eboardd::protocol::dgt::{DgtDecoder, DgtMessage, id};
use eboardd::sim::pty::Pty;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_unplugged_mid_game_moves_still_exact() {
    let s = single("noclock", 4, 36000, SPEED, None);
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
    let unplugged = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    // Host → board, as is.
    let h = host.clone();
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            match h.read(&mut buf).await {
                Ok(n) if n > 0 => {
                    let _ = board_w.write_all(&buf[..n]);
                }
                // No one has the port open: try again shortly.
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    // Board → host, frame by frame; once the clock is unplugged, "no clock" and then no clock
    // message at all.
    let (h, un, st) = (host.clone(), unplugged.clone(), stop.clone());
    let down = std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        let mut dec = DgtDecoder::new();
        let mut msgs = Vec::new();
        let mut told = false;
        while !st.load(Ordering::SeqCst) {
            match board_r.read(&mut buf) {
                Ok(n) if n > 0 => {
                    msgs.clear();
                    dec.decode(&buf[..n], &mut msgs);
                    let mut out = Vec::new();
                    let gone = un.load(Ordering::SeqCst);
                    if gone && !told {
                        out.extend(DgtMessage::NoClock.encode());
                        told = true;
                    }
                    for m in &msgs {
                        let bytes = m.encode();
                        if !(gone && bytes.first() == Some(&id::BWTIME)) {
                            out.extend(bytes);
                        }
                    }
                    let _ = h.write_now(&out);
                }
                _ => break,
            }
        }
    });

    let port = host.path().to_path_buf();
    let mut d = Daemon::start(&[port], &s.caps, &[]);
    d.wait_for("ply 10 to be completed", WAIT, |ev| completed(ev, id, 10))
        .await;
    unplugged.store(true, Ordering::SeqCst);
    let last = s.game.moves.len();
    d.wait_for("the game's last move", WAIT, |ev| made(ev, id, last))
        .await;
    {
        let ev = d.events.lock().unwrap();
        assert_eq!(
            moves_from_events(&ev, id),
            uci(&s.game),
            "{id}: event stream"
        );
        // Every move but the last is completed (by the next move, without a clock).
        assert!(
            completed(&ev, id, last - 1),
            "ply {} not completed",
            last - 1
        );
        // The clock is really gone for the daemon: no clock reading near the end of the game
        // (long after the cable was pulled, at ply 10 or a few plies later).
        assert!(last > 20, "a longer game is needed");
        let later = ev
            .iter()
            .position(|e| {
                e["board"] == id
                    && e["kind"] == "move_made"
                    && e["ply"].as_u64() == Some(last as u64 - 2)
            })
            .expect("a move after the clock went");
        assert!(
            of(&ev[later..], id, "clock").is_empty(),
            "clock readings after the clock was unplugged: {:?}",
            of(&ev[later..], id, "clock")
        );
    }
    up.abort();
    stop.store(true, Ordering::SeqCst);
    drop(down);
    s.finish(d, id);
}
