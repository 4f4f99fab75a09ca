//! ACP-ERROR-DATA (a MAY: gauntlet's own choice of fields): the JSON-RPC error that answers a
//! failed, partially failed or timed-out turn says how it ended: `data.terminalStatus`,
//! `data.errorKind` and `data.nextActions`, so a client can show the failure and offer what to
//! do next.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-ERROR-DATA", also: &[], name: "error_data_complete", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let reported = &evidence.capture.reported;
    let driven = evidence.driven_turns(reported.len());
    let first_driven = evidence.first_driven_turn();
    let mut problems = Vec::new();
    for (idx, (answer, turn)) in reported.iter().zip(&driven).enumerate() {
        let (Some(error), Some(status)) = (&answer.error, turn.status) else { continue };
        if !status.is_failure() {
            continue;
        }
        let missing: Vec<&str> = ["terminalStatus", "errorKind", "nextActions"]
            .into_iter()
            .filter(|key| error.pointer(&format!("/data/{key}")).is_none_or(Value::is_null))
            .collect();
        if !missing.is_empty() {
            problems.push(Violation::in_turn(
                first_driven + idx + 1,
                format!(
                    "turn {} ({status}, as {}) was answered with an error whose data lacks {}: {error}",
                    first_driven + idx + 1,
                    turn.source,
                    missing.join(", ")
                ),
            ));
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
    fn an_error_without_the_terminal_state_is_caught() {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                ("turn_failed", json!({"terminal_status": "failed", "error_kind": "network"})),
            ],
            &[],
        );
        capture.reported.push(Reported { stop_reason: None, error: Some(json!({"code": -32603, "message": "m"})) });
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn 1 (failed, as the Log shows) was answered with an error whose data lacks terminalStatus, errorKind, nextActions: {\"code\":-32603,\"message\":\"m\"}"
            ]
        );
        let data = json!({"terminalStatus": "failed", "errorKind": "network", "nextActions": ["retry_turn"]});
        capture.reported[0].error = Some(json!({"code": -32603, "message": "m", "data": data}));
        assert!(check(INVARIANT, &capture).is_empty());
    }
}
