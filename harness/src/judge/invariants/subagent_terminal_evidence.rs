//! SUB-TERMINAL-EVIDENCE: every Subagent's lifecycle in the parent's Log follows the
//! transition table, and its terminal event carries actionable evidence: a timed-out child
//! has `timeout_ms`, `deadline_at`, `elapsed_ms`, `reason` and `next_actions`; a failed or
//! cancelled one `elapsed_ms`, `reason` and `next_actions` (ADR 0026; pixir.md 6, 7). A child
//! whose own Log does not show a completed Turn is never `completed` in its parent. A
//! `child_log_path`, when given, is the child Session's own Log (`<child_session_id>.ndjson`).

use gauntlet_agent::TerminalStatus;
use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use super::{Invariant, Scope};
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-TERMINAL-EVIDENCE",
    also: &["SUB-TIMEOUT-EVIDENCE", "SUB-LIFECYCLE", "SUB-PARTIAL-NOT-COMPLETED", "SUB-EVENT-FIELDS"],
    name: "subagent_terminal_evidence",
    scope: Scope::Log,
    check,
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let mut last: Vec<(String, SubagentStatus)> = Vec::new();
    for line in evidence.lines.iter().filter(|line| line.kind == "subagent_event") {
        let Some(id) = line.str_field("subagent_id") else { continue };
        let seq = line.seq.unwrap_or_default();
        let Some(status) = line.str_field("status").and_then(SubagentStatus::parse) else {
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
        let required: &[&str] = match status {
            SubagentStatus::TimedOut => &["timeout_ms", "deadline_at", "elapsed_ms", "reason", "next_actions"],
            SubagentStatus::Failed | SubagentStatus::Cancelled => &["elapsed_ms", "reason", "next_actions"],
            SubagentStatus::Detached => &["reason", "next_actions"],
            _ => &[],
        };
        let missing: Vec<&str> = ["event", "child_session_id", "agent", "task"]
            .iter()
            .chain(required)
            .copied()
            .filter(|key| match line.data.get(*key) {
                None | Some(Value::Null) => true,
                Some(Value::Array(items)) => items.is_empty(),
                Some(Value::String(text)) => text.is_empty(),
                Some(_) => false,
            })
            .collect();
        if !missing.is_empty() {
            problems.push(format!("{id} is `{status}` at seq {seq} without {}", missing.join(", ")));
        }
        // SUB-EVENT-FIELDS, SUB-CHILD-LOG: the child's Log path, when given, names its Session.
        if let (Some(path), Some(child)) = (line.str_field("child_log_path"), line.str_field("child_session_id"))
            && !path.ends_with(&format!("/{child}.ndjson"))
        {
            problems.push(format!("{id}'s child_log_path {path:?} at seq {seq} is not its child Session's Log"));
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
                "sub_1 is `timed_out` at seq 1 without timeout_ms, deadline_at, elapsed_ms, next_actions",
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
