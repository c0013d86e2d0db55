//! Arbiter corrections over HTTP: `POST /api/v1/boards/{board}/correct` with an operator action
//! as its JSON body (the shape of a capture's `op` record), and the typed error a
//! [`Control`](super::Control) answers with.

use axum::http::StatusCode;

use crate::core::correction::CorrectionError;

/// Why an operator action was not carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The owner of the board engines (named) has stopped.
    #[error("{0} is not taking operator actions")]
    Stopped(&'static str),
    /// The correction is impossible now (nothing changed, nothing was recorded).
    #[error(transparent)]
    Refused(#[from] CorrectionError),
    /// No such board.
    #[error("no board {0:?}")]
    UnknownBoard(String),
    /// Nobody can carry it out (no engines attached, the daemon stopping, a capture that
    /// cannot be written).
    #[error("{0}")]
    Unavailable(String),
}

impl ControlError {
    /// The HTTP status of the refusal: 400 for an impossible correction, 404 for an unknown
    /// board, 503 when nobody can carry it out.
    pub fn status(&self) -> StatusCode {
        match self {
            ControlError::Refused(_) => StatusCode::BAD_REQUEST,
            ControlError::UnknownBoard(_) => StatusCode::NOT_FOUND,
            ControlError::Unavailable(_) | ControlError::Stopped(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_bad_requests_with_the_reason() {
        let e = ControlError::from(CorrectionError::PlyOutOfRange {
            ply: 9,
            min: 0,
            max: 4,
        });
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            e.to_string(),
            "ply 9 is out of range: the game has plies 0..=4"
        );
        assert_eq!(
            ControlError::Unavailable("x".into()).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
