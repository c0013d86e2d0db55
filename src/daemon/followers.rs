//! The daemon's followers of its own hub: the printer of `--print`, and the players follower
//! that writes players set from the outputs into the boards' captures.

use std::future::Future;
use std::io::Write;

use tokio_util::sync::CancellationToken;

use super::ctx::Ctx;
use super::{Print, demo};
use crate::output::{Content, Hub, Notice};

/// With `--events` (or the demo's moves), every message of the hub on standard output (as JSON
/// lines, or one line in words per event worth one), as soon as the hub publishes it: the
/// printer follows the hub itself, not the event-stream fan-out. `eboardd run` and
/// `eboardd serve-replay` share it. Told to `stop`, it prints what the hub published until
/// then, and ends.
pub fn print_events(
    hub: &Hub,
    print: Print,
    stop: CancellationToken,
) -> Option<impl Future<Output = ()> + Send + 'static> {
    if print == Print::Nothing {
        return None;
    }
    let mut rx = hub.receiver();
    let mut describer = demo::Describer::default();
    Some(async move {
        loop {
            let msg = tokio::select! {
                biased;
                m = rx.recv() => m,
                _ = stop.cancelled() => match rx.try_recv() {
                    Ok(m) => Ok(m),
                    Err(_) => break,
                },
            };
            let msg = match msg {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "printer lagged: events not printed");
                    continue;
                }
                Err(_) => break,
            };
            let text = match print {
                Print::Events => Some(msg.json.to_string()),
                _ => describer.line(&msg),
            };
            if let Some(text) = text {
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
        }
    })
}

/// Players set from the outputs — a round loaded over the API, players set by the arbiter —
/// reach the board's capture as a `set_tags` record (the hub's `players` messages), so that
/// `eboardd replay` names them as every output does. When the follower falls behind the hub
/// (messages lost to lag), every board's players are written again from the hub: no change
/// is skipped.
pub(super) fn follow_players(
    ctx: std::sync::Weak<Ctx>,
    hub: &Hub,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let mut rx = hub.receiver();
    async move {
        loop {
            let received = tokio::select! {
                m = rx.recv() => m,
                _ = stop.cancelled() => break,
            };
            let (board, round) = match received {
                Ok(m) => match &m.content {
                    Content::Notice(Notice::Players { round, .. }) => {
                        (Some(m.board.to_string()), *round)
                    }
                    _ => continue,
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        skipped = n,
                        "players follower lagged: every board's players written again"
                    );
                    (None, None)
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let Some(ctx) = ctx.upgrade() else { break };
            // After a lag: every board, in the round in force.
            let (ids, round): (Vec<String>, Option<u32>) = match board {
                Some(b) => (vec![b], round),
                None => (ctx.board_ids(), Some(ctx.hub.with_round(|r| r.info.round))),
            };
            for id in ids {
                capture_players(&ctx, &id, round);
            }
        }
    }
}

/// Writes the players the hub has for board `id` (and, with `round`, its `Round "R.B"`) into
/// its capture when they changed.
fn capture_players(ctx: &Ctx, id: &str, round: Option<u32>) {
    let Some(board) = ctx.board_in_memory(id) else {
        return;
    };
    let number = ctx.hub.with_round(|r| r.board_number(id));
    let mut s = board.lock().unwrap_or_else(|e| e.into_inner());
    let mut meta = ctx.with_hub_players(id, s.meta().clone());
    if let Some(r) = round {
        meta.round = Some(match meta.number.map(|n| n as usize).or(number) {
            Some(n) => format!("{r}.{n}"),
            None => r.to_string(),
        });
    }
    if let Err(e) = s.set_meta(meta) {
        tracing::error!(board = %id, error = %e, "capture write failed");
    }
}
