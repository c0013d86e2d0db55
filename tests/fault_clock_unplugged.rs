//! Fault injection: the clock's cable is pulled in the middle of a game. A relay between the
//! daemon and the emulated board (a DGT 3000 on its cable) reports "no clock" once and passes no
//! clock message after that, as a board does when its clock goes. The moves must still be
//! recorded exactly: each completed by the next move instead of the clock press.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eboardd::driver::dgt::{DgtDecoder, DgtMessage, id};
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_unplugged_mid_game_moves_still_exact() {
    let s = single("noclock", 4, 36000, SPEED, None);
    let id = s.id.clone();
    let id = id.as_str();
    // The relay: host to board as is; board to host frame by frame, and once the clock is
    // unplugged, "no clock" and then no clock message at all.
    let unplugged = Arc::new(AtomicBool::new(false));
    let un = unplugged.clone();
    let mut dec = DgtDecoder::new();
    let mut msgs = Vec::new();
    let mut told = false;
    let relay = Relay::start(
        &s.link,
        |_| true,
        move |bytes| {
            msgs.clear();
            dec.decode(bytes, &mut msgs);
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
            out
        },
    );

    let port = relay.port();
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
    relay.stop();
    s.finish(d, id).await;
}
