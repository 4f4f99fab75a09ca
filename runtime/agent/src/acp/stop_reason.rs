//! ACP-STOP-REASON: the one function that tells an ACP client how a Turn ended.
//!
//! `end_turn` only for `completed`; `cancelled` for `interrupted`; `max_tokens` / `refusal`
//! when the Provider stopped early but cleanly; and for `failed`, `partial_failed` and
//! `timed_out` a JSON-RPC error whose `data` carries the terminal state, the error kind and the
//! next actions (design.md "Contract decisions"). A failure is never content plus `end_turn`.
//! See protocol docs: <https://agentclientprotocol.com/protocol/prompt-turn#stop-reasons>.

use agent_client_protocol_schema::v1::{Error, ErrorCode, StopReason};
use serde_json::json;

use crate::control::TurnOutcome;
use crate::event::TerminalStatus;

/// The `session/prompt` answer for a Turn's outcome.
pub fn prompt_result(outcome: &TurnOutcome) -> Result<StopReason, Error> {
    match outcome.status {
        TerminalStatus::Completed => Ok(match outcome.truncation.as_deref() {
            None => StopReason::EndTurn,
            Some("content_filter") => StopReason::Refusal,
            Some(_) => StopReason::MaxTokens,
        }),
        TerminalStatus::Interrupted => Ok(StopReason::Cancelled),
        TerminalStatus::Failed | TerminalStatus::PartialFailed | TerminalStatus::TimedOut => {
            let kind = outcome.error_kind.map(|kind| kind.as_str());
            let message = outcome.message.as_deref().unwrap_or("the turn did not complete");
            let data = json!({
                "terminalStatus": outcome.status.as_str(),
                "errorKind": kind,
                "nextActions": outcome.next_actions,
                "message": message,
            });
            Err(Error::new(ErrorCode::InternalError.into(), format!("turn {}: {message}", outcome.status)).data(data))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ErrorKind;

    fn outcome(status: TerminalStatus, truncation: Option<&str>) -> TurnOutcome {
        TurnOutcome {
            status,
            error_kind: (status != TerminalStatus::Completed).then_some(ErrorKind::Network),
            message: None,
            next_actions: vec!["retry_turn".into()],
            truncation: truncation.map(str::to_owned),
        }
    }

    #[test]
    fn completed_is_end_turn_unless_the_provider_stopped_early() {
        assert_eq!(prompt_result(&outcome(TerminalStatus::Completed, None)), Ok(StopReason::EndTurn));
        let truncated = outcome(TerminalStatus::Completed, Some("max_output_tokens"));
        assert_eq!(prompt_result(&truncated), Ok(StopReason::MaxTokens));
        let filtered = outcome(TerminalStatus::Completed, Some("content_filter"));
        assert_eq!(prompt_result(&filtered), Ok(StopReason::Refusal));
    }

    #[test]
    fn interrupted_is_cancelled() {
        assert_eq!(prompt_result(&outcome(TerminalStatus::Interrupted, None)), Ok(StopReason::Cancelled));
    }

    #[test]
    fn failures_are_errors_carrying_the_terminal_state() {
        for status in [TerminalStatus::Failed, TerminalStatus::PartialFailed, TerminalStatus::TimedOut] {
            let error = prompt_result(&outcome(status, None)).unwrap_err();
            assert_eq!(i32::from(error.code), -32603);
            let data = error.data.unwrap();
            assert_eq!(data["terminalStatus"], status.as_str());
            assert_eq!(data["errorKind"], "network");
            assert_eq!(data["nextActions"][0], "retry_turn");
        }
    }
}
