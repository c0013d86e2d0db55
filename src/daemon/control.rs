//! Operator actions from the outputs (arbiter page, API), carried out at once on the board so
//! that the caller hears whether they were refused: checked, captured as `op` records, applied.

use std::collections::HashMap;
use std::sync::Weak;

use super::ctx::Ctx;
use crate::core::observation::OperatorAction;
use crate::output::Pairing;
use crate::output::corrections::ControlError;
use crate::round::check::BoardSenses;

/// The daemon's [`crate::output::Control`]: holds the daemon's context weakly (the outputs must
/// not keep it alive).
pub(super) struct DaemonControl {
    /// The daemon's boards and hub.
    pub(super) ctx: Weak<Ctx>,
}

impl crate::output::Control for DaemonControl {
    fn operator(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        self.correct(board, action)
    }

    fn correct(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        let ctx = self.ctx()?;
        let state = ctx
            .board_in_memory(board)
            .ok_or_else(|| ControlError::UnknownBoard(board.to_string()))?;
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.correct(action, &ctx.hub).map(|_| ())
    }

    /// The players go to the board's capture (a `set_tags` record) before the hub shows them;
    /// a board with no capture open yet (configured, never connected) gets them in its
    /// header when it opens (from the hub).
    fn players(&self, board: &str, pairing: &Pairing) -> Result<(), ControlError> {
        let ctx = self.ctx()?;
        let Some(state) = ctx.board_in_memory(board) else {
            return Ok(());
        };
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        let mut meta = s.meta().clone();
        meta.white.clone_from(&pairing.white.name);
        meta.black.clone_from(&pairing.black.name);
        meta.white_team.clone_from(&pairing.white.team);
        meta.black_team.clone_from(&pairing.black.team);
        s.set_meta(meta).map_err(|e| {
            ControlError::Unavailable(format!("the players could not be captured: {e}"))
        })
    }

    /// Each board in memory, locked in turn (never two at once, never with the hub locked).
    fn senses(&self) -> HashMap<String, BoardSenses> {
        let Ok(ctx) = self.ctx() else {
            return HashMap::new();
        };
        ctx.all_boards()
            .into_iter()
            .map(|b| {
                let s = b.lock().unwrap_or_else(|e| e.into_inner());
                (s.id.clone(), s.senses())
            })
            .collect()
    }
}

impl DaemonControl {
    /// The daemon's context, while it runs.
    fn ctx(&self) -> Result<std::sync::Arc<Ctx>, ControlError> {
        self.ctx
            .upgrade()
            .ok_or_else(|| ControlError::Unavailable("the daemon is stopping".into()))
    }
}
