//! ACP-FAILURE-IS-ERROR: a failed, partially failed or timed-out turn is never answered as a
//! turn that ran to its end (`end_turn`, `max_tokens`, `max_turn_requests`, `refusal`). ACP has
//! no stop reason for a failure, so the honest answer is a JSON-RPC error; what its `data`
//! carries is ACP-ERROR-DATA's (a SHOULD), and `cancelled` for a turn the client did not cancel
//! is ACP-STOP-REASON's. When what the client was shown as the answer holds a failure's text
//! (the Provider's error message), the finding says so: seed 000's diagnostics are not answers.

use crate::judge::evidence::Evidence;
use crate::judge::transcript::shown_text;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::diagnostics;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-FAILURE-IS-ERROR", also: &[], name: "failure_not_end_turn", applies: Scope::Run, check };

/// The stop reasons of a turn that ran to its end.
const FINISHED: [&str; 4] = ["end_turn", "max_tokens", "max_turn_requests", "refusal"];

fn check(evidence: &Evidence) -> Vec<Violation> {
    let reported = &evidence.capture.reported;
    let driven = evidence.driven_turns(reported.len());
    let first_driven = evidence.first_driven_turn();
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    let diagnostics = diagnostics::diagnostics(evidence);
    let mut problems = Vec::new();
    for (idx, (answer, turn)) in reported.iter().zip(&driven).enumerate() {
        let (Some(reason), Some(status)) = (answer.stop_reason.as_deref(), turn.status) else { continue };
        if status.is_failure() && FINISHED.contains(&reason) {
            let shown = live.get(idx).map(|exchange| shown_text(exchange)).unwrap_or_default();
            let passed_off = diagnostics
                .iter()
                .find(|diagnostic| shown.contains(diagnostic.text.as_str()))
                .map(|diagnostic| format!("; the answer it showed, {shown:?}, is {}", diagnostic.origin))
                .unwrap_or_default();
            problems.push(Violation::in_turn(first_driven + idx + 1, format!(
                "turn {} is `{status}` ({}) but was answered with stop reason `{reason}`, as if it had finished{passed_off}",
                first_driven + idx + 1,
                turn.source
            )));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_failed_turn_answered_end_turn_is_caught_an_error_without_data_is_not() {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                ("turn_failed", json!({"terminal_status": "timed_out", "error_kind": "stream_idle_timeout"})),
            ],
            &[],
        );
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn 1 is `timed_out` (the Log shows) but was answered with stop reason `end_turn`, as if it had finished"
            ]
        );
        capture.reported[0] = Reported { stop_reason: None, error: Some(json!({"code": -32603, "message": "m"})) };
        assert!(check(INVARIANT, &capture).is_empty());
    }
}
