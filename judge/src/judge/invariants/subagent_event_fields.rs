//! SUB-EVENT-FIELDS (SHOULD): every `subagent_event` gives the data keys pixir.md 7 names
//! beyond what seed 000 asks (SUB-TERMINAL-EVIDENCE): `event`, `agent` and `task` on each;
//! `elapsed_ms` and `next_actions` when it failed or was cancelled, `deadline_at` when it timed
//! out, a `reason` when it was detached; and a `child_log_path`, when given, is the child
//! Session's own Log (`<child_session_id>.ndjson`, SUB-CHILD-LOG).

use gauntlet_agent::EventType;
use gauntlet_agent::event::SubagentStatus;

use super::subagent_terminal_evidence::missing;
use super::{Invariant, Scope, Violation};
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-EVENT-FIELDS",
    also: &["SUB-CHILD-LOG"],
    name: "subagent_event_fields",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// The keys pixir.md 7 adds for a `subagent_event` of this status.
fn pixir_keys(status: Option<SubagentStatus>) -> &'static [&'static str] {
    match status {
        Some(SubagentStatus::Failed | SubagentStatus::Cancelled) => {
            &["event", "agent", "task", "elapsed_ms", "next_actions"]
        }
        Some(SubagentStatus::TimedOut) => &["event", "agent", "task", "deadline_at"],
        Some(SubagentStatus::Detached) => &["event", "agent", "task", "reason"],
        _ => &["event", "agent", "task"],
    }
}

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for line in evidence.lines.iter().filter(|line| line.kind == EventType::SubagentEvent) {
        let id = line.str_field("subagent_id").unwrap_or("?");
        let seq = line.seq.unwrap_or_default();
        let status = line.subagent_status();
        let missing = missing(&line.data, pixir_keys(status));
        if !missing.is_empty() {
            let status = line.str_field("status").unwrap_or("?");
            problems.push(format!("{id} is `{status}` at seq {seq} without {}", missing.join(", ")));
        }
        if let (Some(path), Some(child)) = (line.str_field("child_log_path"), line.str_field("child_session_id"))
            && !path.ends_with(&format!("/{child}.ndjson"))
        {
            problems.push(format!("{id}'s child_log_path {path:?} at seq {seq} is not its child Session's Log"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::invariants::fixture::{capture, check};

    #[test]
    fn pixirs_keys_and_the_childs_own_log_are_asked() {
        let capture = capture(
            &[
                (
                    "subagent_event",
                    json!({"event": "started", "status": "running", "subagent_id": "sub_1", "child_session_id": "c", "agent": "a", "task": "t",
                        "child_log_path": "/w/.gauntlet/sessions/c.ndjson"}),
                ),
                (
                    "subagent_event",
                    json!({"status": "timed_out", "subagent_id": "sub_1", "child_session_id": "c", "task": "t",
                        "timeout_ms": 5, "elapsed_ms": 5, "reason": "timeout", "next_actions": ["retry"],
                        "child_log_path": "/w/.gauntlet/sessions/other.ndjson"}),
                ),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "sub_1 is `timed_out` at seq 1 without event, agent, deadline_at",
                "sub_1's child_log_path \"/w/.gauntlet/sessions/other.ndjson\" at seq 1 is not its child Session's Log",
            ]
        );
    }
}
