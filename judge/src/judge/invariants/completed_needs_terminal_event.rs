//! WIRE-TERMINAL-EVENT-REQUIRED, on the wire: a turn is never `completed` when the last
//! Provider response of that turn did not end cleanly: no terminal event (an EOF, a dropped
//! connection, a malformed frame), an in-band error or failure, an HTTP error, or a request no
//! script answered. What the turn is: the Log's terminal state, or, for an implementation
//! without a Log, what its answer to `session/prompt` claims. So a scenario that forgets its
//! `expect` line still catches a runtime that calls an unterminated stream complete.

use gauntlet_agent::TerminalStatus;
use gauntlet_mock_provider::After;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{request_turns, served};

pub const INVARIANT: Invariant = Invariant {
    id: "WIRE-TERMINAL-EVENT-REQUIRED",
    also: &["TURN-TERMINAL-EVIDENCE"],
    name: "completed_needs_terminal_event",
    applies: Scope::Run,
    check,
};

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let turns = request_turns(evidence);
    let requests = &evidence.capture.requests;
    let first_turn = scenario.turns.len().saturating_sub(evidence.capture.reported.len());
    let mut problems = Vec::new();
    for (offset, reported) in evidence.capture.reported.iter().enumerate() {
        let turn = first_turn + offset;
        let (status, source) = match evidence.audit.turns.get(evidence.first_driven_turn() + offset) {
            Some(audited) if !evidence.capture.log.is_empty() => (audited.terminal_status, "the Log records"),
            _ => (reported.claimed_status(), "the agent answered"),
        };
        // A turn the client cancelled and the agent called finished is ACP-STOP-REASON's lie.
        let cancelled = evidence.capture.cancels.iter().any(|cancel| cancel.turn == turn);
        if status != Some(TerminalStatus::Completed) || cancelled {
            continue;
        }
        let Some(last) = turns.iter().rposition(|request_turn| *request_turn == Some(turn)) else { continue };
        let request = &requests[last];
        if request.route != gauntlet_mock_provider::ROOT {
            continue;
        }
        let why = match served(evidence, request) {
            // An unplaced request after the turn's answer got an empty clean response, which
            // did end with its terminal event.
            None if request.unplaced.as_ref().is_some_and(After::answers_empty) => continue,
            None => "no scripted response answered it".to_owned(),
            Some(response) if response.fails() => match response.status {
                Some(status) => format!("the script answered HTTP {status}"),
                None => format!("the script ended it `{}`", ending_name(&response.then)),
            },
            Some(_) => continue,
        };
        problems.push(Violation::in_turn(turn + 1, format!(
            "turn {}: {source} it completed, but its last Provider request (request {}) got no clean answer with a terminal event: {why}",
            turn + 1,
            last + 1
        )));
    }
    problems
}

/// The scenario-file name of an ending.
fn ending_name(ending: &gauntlet_mock_provider::Ending) -> String {
    serde_json::to_value(ending)
        .ok()
        .and_then(|value| match value {
            serde_json::Value::String(name) => Some(name),
            serde_json::Value::Object(map) => map.keys().next().cloned(),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::{Capture, Reported};
    use crate::judge::fixture::{body, capture, check_played, requests, scenario, user};

    const EOF: &str = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"failed\"\nrespond = [{ text = [\"Half\"], then = \"eof\" }]\n";

    fn completed_log() -> Capture {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "Summarise"})),
                ("provider_usage", json!({})),
                ("assistant_message", json!({"text": "Half"})),
            ],
            &[],
        );
        capture.requests = requests(vec![body(vec![user("Summarise")])]);
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        capture
    }

    #[test]
    fn a_turn_completed_over_an_unterminated_stream_is_caught() {
        assert_eq!(
            check_played(INVARIANT, &completed_log(), &scenario(EOF)),
            [
                "turn 1: the Log records it completed, but its last Provider request (request 1) got no clean answer with a terminal event: the script ended it `eof`"
            ]
        );
    }

    #[test]
    fn an_agent_without_a_log_is_judged_by_its_answer() {
        let mut capture = completed_log();
        capture.log.clear();
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(EOF)),
            [
                "turn 1: the agent answered it completed, but its last Provider request (request 1) got no clean answer with a terminal event: the script ended it `eof`"
            ]
        );
        capture.reported[0] = Reported { stop_reason: None, error: Some(json!({"code": -32603})) };
        assert!(check_played(INVARIANT, &capture, &scenario(EOF)).is_empty());
    }

    /// A turn the client cancelled that the agent answered `end_turn` is ACP-STOP-REASON's.
    #[test]
    fn a_cancelled_turn_is_left_to_the_stop_reason_rule() {
        let mut capture = completed_log();
        capture.log.clear();
        capture.cancels.push(crate::capture::Cancel {
            turn: 0,
            sent: std::time::Duration::ZERO,
            impatient: true,
            by_request: false,
        });
        assert!(check_played(INVARIANT, &capture, &scenario(EOF)).is_empty());
    }

    #[test]
    fn a_clean_last_response_after_a_retry_passes() {
        let text =
            "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nrespond = [{ status = 500 }, { text = [\"Half\"] }]\n";
        let mut capture = completed_log();
        capture.requests = requests(vec![body(vec![user("Summarise")]), body(vec![user("Summarise")])]);
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
    }
}
