//! The daemon's followers of its own hub: the printer of `--print`, and the players follower
//! that writes players set from the outputs into the boards' captures.

use std::io::Write;

use tokio::task::JoinHandle;

use super::ctx::Ctx;
use super::{Print, demo};
use crate::output::{Hub, Message, Notice};

/// With `--print`, every message of the hub on standard output (as JSON lines, or one line
/// in words per event worth one).
pub(super) fn print_events(hub: &Hub, print: Print) -> Option<JoinHandle<()>> {
    if print == Print::Nothing {
        return None;
    }
    let mut rx = hub.receiver();
    let mut describer = demo::Describer::default();
    Some(tokio::spawn(async move {
        loop {
            let msg = match rx.recv().await {
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
    }))
}

/// Players set from the outputs — a round loaded over the API, players set by the arbiter —
/// reach the board's capture as a `set_tags` record (the hub's `players` messages), so that
/// `eboardd replay` names them as every output does.
pub(super) fn follow_players(ctx: std::sync::Weak<Ctx>, hub: &Hub) -> JoinHandle<()> {
    let mut rx = hub.receiver();
    tokio::spawn(async move {
        loop {
            let m = match rx.recv().await {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let Message::Notice(Notice::Players { round, .. }) = m.message else {
                continue;
            };
            let Some(ctx) = ctx.upgrade() else { break };
            let board = ctx
                .boards
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&*m.board)
                .cloned();
            let Some(board) = board else { continue };
            let number = ctx.hub.with_round(|r| r.board_number(&m.board));
            let mut s = board.lock().unwrap_or_else(|e| e.into_inner());
            let mut meta = ctx.with_hub_players(&m.board, s.meta().clone());
            if let Some(r) = round {
                meta.round = Some(match meta.number.map(|n| n as usize).or(number) {
                    Some(n) => format!("{r}.{n}"),
                    None => r.to_string(),
                });
            }
            if let Err(e) = s.set_meta(meta) {
                tracing::error!(board = %m.board, error = %e, "capture write failed");
            }
        }
    })
}
