//! ACP-CANCEL-REQUEST-ANSWER: a `session/prompt` the client cancelled with `$/cancel_request`
//! is answered, and a turn the cancel cut is answered as cut: the `cancelled` stop reason (the
//! prompt's cancellation marker) or error -32800, never a stop reason that says the turn ran to
//! its end, nor another error (ACP "Cancellation": the receiver "MUST send one of these
//! responses for the original request: a valid response with appropriate data (such as partial
//! results or cancellation marker), an error response with code -32800"). An agent MAY ignore
//! the cancel: a turn that then ran to its end is answered as it ended (ACP-STOP-REASON).

use gauntlet_agent::TerminalStatus;

use crate::capture::REQUEST_CANCELLED;
use crate::judge::evidence::Evidence;
use crate::judge::transcript::describe;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-CANCEL-REQUEST-ANSWER",
    also: &[],
    name: "cancel_request_answered",
    applies: Scope::Run,
    check,
};

fn check(evidence: &Evidence) -> Vec<Violation> {
    let reported = &evidence.capture.reported;
    let driven = evidence.driven_turns(reported.len());
    let mut problems = Vec::new();
    let mut judged: Vec<usize> = Vec::new();
    for cancel in evidence.capture.cancels.iter().filter(|cancel| cancel.by_request) {
        let idx = cancel.turn;
        if judged.contains(&idx) {
            continue;
        }
        judged.push(idx);
        let n = idx + 1;
        let Some(answer) = reported.get(idx) else {
            problems.push(Violation::in_turn(
                n,
                format!("turn {n}: the prompt cancelled by $/cancel_request was never answered"),
            ));
            continue;
        };
        let Some(status) = driven.get(idx).and_then(|turn| turn.status) else { continue };
        if status != TerminalStatus::Interrupted {
            continue; // the turn ended before the cancel could cut it: ACP-STOP-REASON judges it
        }
        let code = answer.error.as_ref().and_then(|error| error.get("code")).and_then(serde_json::Value::as_i64);
        let honest = match (answer.stop_reason.as_deref(), code) {
            (Some("cancelled"), None) => true,
            (None, Some(code)) => code == REQUEST_CANCELLED,
            _ => false,
        };
        if !honest {
            let said = describe(answer.stop_reason.as_deref(), answer.error.as_ref());
            problems.push(Violation::in_turn(
                n,
                format!(
                    "turn {n} was cut by $/cancel_request ({}) but was answered {said}: a cancelled request is answered \
                     `cancelled` or with error -32800",
                    driven[idx].source
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Cancel, Capture, Reported};
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    fn cut(answer: Reported) -> Capture {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                ("turn_failed", json!({"terminal_status": "interrupted", "error_kind": "cancelled"})),
            ],
            &[],
        );
        capture.cancels.push(Cancel { turn: 0, sent: std::time::Duration::ZERO, impatient: false, by_request: true });
        capture.reported.push(answer);
        capture
    }

    #[test]
    fn cancelled_and_request_cancelled_pass() {
        assert!(check(INVARIANT, &cut(Reported { stop_reason: Some("cancelled".into()), error: None })).is_empty());
        let error = json!({"code": -32800, "message": "Request cancelled"});
        assert!(check(INVARIANT, &cut(Reported { stop_reason: None, error: Some(error) })).is_empty());
    }

    #[test]
    fn a_cut_turn_answered_end_turn_or_another_error_is_caught() {
        assert_eq!(
            check(INVARIANT, &cut(Reported { stop_reason: Some("end_turn".into()), error: None })),
            ["turn 1 was cut by $/cancel_request (the Log shows) but was answered with stop reason `end_turn`: a \
                 cancelled request is answered `cancelled` or with error -32800"]
        );
        let error = json!({"code": -32603, "message": "stopped"});
        assert_eq!(check(INVARIANT, &cut(Reported { stop_reason: None, error: Some(error) })).len(), 1);
    }

    #[test]
    fn a_turn_that_ended_before_the_cancel_is_not_this_rules() {
        let mut capture =
            capture(&[("user_message", json!({"text": "q"})), ("assistant_message", json!({"text": "a"}))], &[]);
        capture.cancels.push(Cancel { turn: 0, sent: std::time::Duration::ZERO, impatient: false, by_request: true });
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert!(check(INVARIANT, &capture).is_empty());
    }
}
