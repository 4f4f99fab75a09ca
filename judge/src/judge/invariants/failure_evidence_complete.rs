//! TURN-FAILED-EVIDENCE: failure evidence is complete and agrees with itself. `turn_failed`
//! carries a non-completed ADR terminal status and an `error_kind` (seed 000 `failed`); a
//! `timed_out` one adds `timeout_ms` and `next_actions` (TURN-TIMEOUT-EVIDENCE: "timeout and
//! next-action context"); partial text is always followed by its `turn_failed`, and a
//! `partial_failed` turn keeps its text as a partial message, never as a clean one that replay
//! would send back as a final answer (TURN-PARTIAL-EVIDENCE).
//!
//! What no seed sentence asks in so many words is TURN-FAILURE-DETAILS' (a SHOULD, gauntlet's
//! reading): `details.elapsed_ms` on every failure, a timeout's cause recorded `timed_out`, and
//! a timeout that took at least its `timeout_ms`.

use gauntlet_agent::EventType;
use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::log_line::Line;

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-FAILED-EVIDENCE",
    also: &[PARTIAL, TIMEOUT, DETAILS],
    name: "failure_evidence_complete",
    applies: Scope::Log,
    check,
};

const PARTIAL: &str = "TURN-PARTIAL-EVIDENCE";
const TIMEOUT: &str = "TURN-TIMEOUT-EVIDENCE";
const DETAILS: &str = "TURN-FAILURE-DETAILS";

/// The causes that make a Turn `timed_out`.
const TIMEOUT_KINDS: [&str; 2] = ["stream_idle_timeout", "turn_timeout"];

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    for (idx, line) in evidence.lines.iter().enumerate() {
        let at = line.seq.unwrap_or_default();
        if let Some(failed) = line.turn_failed() {
            let status = failed.terminal_status;
            match status.and_then(TerminalStatus::parse) {
                None | Some(TerminalStatus::Completed) => {
                    problems.push(Violation::new(format!(
                        "turn_failed at seq {at} has terminal_status {status:?}, not a failure state"
                    )));
                }
                Some(TerminalStatus::TimedOut) => {
                    for key in ["timeout_ms", "next_actions"] {
                        if failed.detail(key).is_none() {
                            let message = format!("timed-out turn_failed at seq {at} lacks details.{key}");
                            problems.push(Violation::new(message).of(TIMEOUT));
                        }
                    }
                    let number = |key: &str| failed.detail(key).and_then(Value::as_u64);
                    if let (Some(elapsed), Some(timeout)) = (number("elapsed_ms"), number("timeout_ms"))
                        && elapsed < timeout
                    {
                        let message = format!(
                            "timed-out turn_failed at seq {at} says elapsed_ms {elapsed}, less than its timeout_ms {timeout}"
                        );
                        problems.push(Violation::new(message).of(DETAILS));
                    }
                }
                Some(other) => {
                    if other == TerminalStatus::PartialFailed {
                        let missing = partial_text_missing(&evidence.lines[..idx], at);
                        problems.extend(missing.map(|message| Violation::new(message).of(PARTIAL)));
                    }
                    if let Some(kind) = failed.error_kind.filter(|kind| TIMEOUT_KINDS.contains(kind)) {
                        let message = format!(
                            "turn_failed at seq {at} has error_kind {kind} but terminal_status {other}: a timeout ends timed_out"
                        );
                        problems.push(Violation::new(message).of(DETAILS));
                    }
                }
            }
            if failed.error_kind.is_none_or(str::is_empty) {
                problems.push(Violation::new(format!("turn_failed at seq {at} has no error_kind")));
            }
            if failed.detail("elapsed_ms").and_then(Value::as_u64).is_none() {
                let message = format!("turn_failed at seq {at} lacks details.elapsed_ms");
                problems.push(Violation::new(message).of(DETAILS));
            }
        }
        if let Some(partial) = line.assistant_message().filter(|message| message.partial) {
            let rest = &evidence.lines[idx + 1..];
            let next_turn = rest.iter().position(|l| l.kind == EventType::UserMessage).unwrap_or(rest.len());
            let failed = rest[..next_turn].iter().find_map(Line::turn_failed);
            match failed {
                None => {
                    let message = format!("partial assistant_message at seq {at} has no turn_failed after it");
                    problems.push(Violation::new(message).of(PARTIAL));
                }
                Some(failed) => {
                    let partial_status = partial.terminal_status;
                    if partial_status != failed.terminal_status {
                        let message = format!(
                            "partial assistant_message at seq {at} says {partial_status:?} but its turn_failed says {:?}",
                            failed.terminal_status
                        );
                        problems.push(Violation::new(message).of(PARTIAL));
                    }
                }
            }
        }
    }
    problems
}

/// For a `partial_failed` `turn_failed` at seq `at` after `before`: a problem when its turn
/// holds no partial `assistant_message`, naming the clean one that took its place, if any.
fn partial_text_missing(before: &[Line], at: u64) -> Option<String> {
    let turn_start = before.iter().rposition(|line| line.kind == EventType::UserMessage).map_or(0, |idx| idx + 1);
    let turn = &before[turn_start..];
    if turn.iter().any(Line::is_partial_assistant) {
        return None;
    }
    Some(match turn.iter().rfind(|line| line.kind == EventType::AssistantMessage) {
        Some(clean) => format!(
            "the assistant_message at seq {} is recorded clean, but its turn ends partial_failed at seq {at}: replay would send the partial text as a final answer",
            clean.seq.unwrap_or_default()
        ),
        None => format!("turn_failed at seq {at} is partial_failed, but its turn keeps no partial assistant_message"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_timeout_without_next_actions_is_caught() {
        let failed = json!({"terminal_status": "timed_out", "error_kind": "stream_idle_timeout",
            "details": {"timeout_ms": 1000, "elapsed_ms": 1000}});
        let capture = capture(&[("user_message", json!({})), ("turn_failed", failed)], &[]);
        assert_eq!(check(INVARIANT, &capture), ["timed-out turn_failed at seq 1 lacks details.next_actions"]);
    }

    /// What no seed sentence asks in so many words is the SHOULD's, never the MUST's (issue 31).
    #[test]
    fn elapsed_time_and_a_timeout_recorded_failed_are_the_shoulds() {
        use crate::judge::fixture::check_as;
        let failed = json!({"terminal_status": "failed", "error_kind": "stream_idle_timeout", "details": {}});
        let capture = capture(&[("user_message", json!({})), ("turn_failed", failed)], &[]);
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &capture), Vec::<String>::new());
        assert_eq!(check_as(INVARIANT, TIMEOUT, &capture), Vec::<String>::new());
        assert_eq!(
            check_as(INVARIANT, DETAILS, &capture),
            [
                "turn_failed at seq 1 has error_kind stream_idle_timeout but terminal_status failed: a timeout ends timed_out",
                "turn_failed at seq 1 lacks details.elapsed_ms",
            ]
        );
    }

    #[test]
    fn partial_text_recorded_clean_is_caught() {
        let failed =
            json!({"terminal_status": "partial_failed", "error_kind": "network", "details": {"elapsed_ms": 0}});
        let capture = capture(
            &[("user_message", json!({})), ("assistant_message", json!({"text": "ha"})), ("turn_failed", failed)],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "the assistant_message at seq 1 is recorded clean, but its turn ends partial_failed at seq 2: replay would send the partial text as a final answer"
            ]
        );
    }

    #[test]
    fn partial_text_without_turn_failed_is_caught() {
        let partial = json!({"text": "ha", "metadata": {"partial": true, "terminal_status": "partial_failed"}});
        let capture = capture(&[("user_message", json!({})), ("assistant_message", partial)], &[]);
        assert_eq!(check(INVARIANT, &capture), ["partial assistant_message at seq 1 has no turn_failed after it"]);
    }

    #[test]
    fn a_timeout_recorded_failed_or_faster_than_its_timeout_is_caught() {
        let failed = json!({"terminal_status": "failed", "error_kind": "stream_idle_timeout",
            "details": {"timeout_ms": 1000, "elapsed_ms": 1000, "next_actions": []}});
        let early = json!({"terminal_status": "timed_out", "error_kind": "turn_timeout",
            "details": {"timeout_ms": 1000, "elapsed_ms": 999, "next_actions": []}});
        let capture = capture(
            &[
                ("user_message", json!({})),
                ("turn_failed", failed),
                ("user_message", json!({})),
                ("turn_failed", early),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn_failed at seq 1 has error_kind stream_idle_timeout but terminal_status failed: a timeout ends timed_out",
                "timed-out turn_failed at seq 3 says elapsed_ms 999, less than its timeout_ms 1000",
            ]
        );
    }
}
