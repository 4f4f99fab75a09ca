//! SUB-TERMINAL-EVIDENCE: every Subagent's lifecycle in the parent's Log follows the
//! transition table, and each `subagent_event` carries the evidence seed 000 (ADR 0026
//! "Subagent terminal states") asks of its status: every one its child Session and status; a
//! failed child its `reason` and `next_actions`; a timed-out one `timeout_ms`, `elapsed_ms`,
//! `reason` and `next_actions`; a cancelled one its `reason`; a detached one how to inspect or
//! resume it (`next_actions`). A child whose own Log does not show a completed Turn is never
//! `completed` in its parent. The further keys pixir.md 7 gives are SUB-EVENT-FIELDS'.

use gauntlet_agent::EventType;
use gauntlet_agent::TerminalStatus;
use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use super::{Invariant, Scope, Violation};
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-TERMINAL-EVIDENCE",
    also: &["SUB-TIMEOUT-EVIDENCE", "SUB-LIFECYCLE", "SUB-PARTIAL-NOT-COMPLETED"],
    name: "subagent_terminal_evidence",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let mut last: Vec<(String, SubagentStatus)> = Vec::new();
    for line in evidence.lines.iter().filter(|line| line.kind == EventType::SubagentEvent) {
        let Some(id) = line.str_field("subagent_id") else { continue };
        let seq = line.seq.unwrap_or_default();
        let Some(status) = line.subagent_status() else {
            problems.push(format!("subagent_event at seq {seq} ({id}) has no known `status`"));
            continue;
        };
        match last.iter_mut().find(|(known, _)| known == id) {
            Some((_, previous)) => {
                if !previous.can_become(status) {
                    problems.push(format!(
                        "{id} goes from `{previous}` to `{status}` at seq {seq}, which the lifecycle forbids"
                    ));
                }
                *previous = status;
            }
            None => last.push((id.to_owned(), status)),
        }
        let missing = missing(&line.data, seed_evidence(status));
        if !missing.is_empty() {
            problems.push(format!("{id} is `{status}` at seq {seq} without {}", missing.join(", ")));
        }
    }
    for subagent in &evidence.audit.subagents {
        if subagent.status == Some(SubagentStatus::Completed)
            && subagent.child_turn.is_some_and(|turn| turn != TerminalStatus::Completed)
        {
            problems.push(format!(
                "{} is `completed` in the parent's Log, but its own Log shows its Turn `{}`",
                subagent.subagent_id,
                subagent.child_turn.map_or("-", TerminalStatus::as_str)
            ));
        }
    }
    problems
}

/// The keys seed 000 (ADR 0026 "Subagent terminal states") asks a `subagent_event` of this
/// status to carry (the Subagent's own id is how the event is read at all).
fn seed_evidence(status: SubagentStatus) -> &'static [&'static str] {
    match status {
        SubagentStatus::TimedOut => &["child_session_id", "timeout_ms", "elapsed_ms", "reason", "next_actions"],
        SubagentStatus::Failed => &["child_session_id", "reason", "next_actions"],
        SubagentStatus::Cancelled => &["child_session_id", "reason"],
        SubagentStatus::Detached => &["child_session_id", "next_actions"],
        _ => &["child_session_id"],
    }
}

/// The keys of `keys` that `data` leaves out, null or empty.
pub(super) fn missing<'k>(data: &Value, keys: &[&'k str]) -> Vec<&'k str> {
    keys.iter()
        .copied()
        .filter(|key| match data.get(*key) {
            None | Some(Value::Null) => true,
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::String(text)) => text.is_empty(),
            Some(_) => false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_timeout_without_its_evidence_and_a_bad_transition_are_caught() {
        let capture = capture(
            &[
                (
                    "subagent_event",
                    json!({"event": "started", "status": "running", "subagent_id": "sub_1", "child_session_id": "c", "agent": "a", "task": "t"}),
                ),
                (
                    "subagent_event",
                    json!({"event": "timed_out", "status": "timed_out", "subagent_id": "sub_1", "child_session_id": "c", "agent": "a", "task": "t", "reason": "timeout"}),
                ),
                (
                    "subagent_event",
                    json!({"event": "finished", "status": "completed", "subagent_id": "sub_1", "child_session_id": "c", "agent": "a", "task": "t"}),
                ),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "sub_1 is `timed_out` at seq 1 without timeout_ms, elapsed_ms, next_actions",
                "sub_1 goes from `timed_out` to `completed` at seq 2, which the lifecycle forbids",
            ]
        );
    }

    #[test]
    fn a_completed_child_whose_log_shows_a_partial_failure_is_caught() {
        let mut capture = capture(
            &[(
                "subagent_event",
                json!({"event": "finished", "status": "completed", "subagent_id": "sub_1", "child_session_id": "sub_1", "agent": "a", "task": "t"}),
            )],
            &[],
        );
        capture.children.insert(
            "sub_1".into(),
            vec![
                r#"{"data":{"text":"go"},"id":"1","seq":0,"session_id":"sub_1","ts":"t","type":"user_message"}"#.into(),
                r#"{"data":{"terminal_status":"partial_failed","error_kind":"network"},"id":"2","seq":1,"session_id":"sub_1","ts":"t","type":"turn_failed"}"#.into(),
            ],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            ["sub_1 is `completed` in the parent's Log, but its own Log shows its Turn `partial_failed`"]
        );
    }
}
