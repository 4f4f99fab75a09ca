//! SUB-EVENT-FIELDS (SHOULD): every `subagent_event` gives the data keys seed 004 lists beyond
//! what seed 000 asks (SUB-TERMINAL-EVIDENCE): `event`, `agent` and `task` on each. The keys
//! only pixir.md 7 names, `elapsed_ms` and `next_actions` when it failed or was cancelled,
//! `deadline_at` when it timed out, a `reason` when it was detached, are the reference's
//! (SUB-REF-DETAILS, a MAY); a `child_log_path`, when given, is the child Session's own Log
//! (`<child_session_id>.ndjson`, SUB-CHILD-LOG).

use gauntlet_agent::event::SubagentStatus;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::missing;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-EVENT-FIELDS",
    also: &["SUB-CHILD-LOG", REFERENCE],
    name: "subagent_event_fields",
    applies: Scope::Log,
    check,
};

const REFERENCE: &str = "SUB-REF-DETAILS";

/// The keys seed 004 lists for every `subagent_event` beyond seed 000's evidence.
const SEED_KEYS: [&str; 3] = ["event", "agent", "task"];

/// The keys only pixir.md 7 adds for a `subagent_event` of this status.
fn pixir_keys(status: Option<SubagentStatus>) -> &'static [&'static str] {
    match status {
        Some(SubagentStatus::Failed | SubagentStatus::Cancelled) => &["elapsed_ms", "next_actions"],
        Some(SubagentStatus::TimedOut) => &["deadline_at"],
        Some(SubagentStatus::Detached) => &["reason"],
        _ => &[],
    }
}

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    for line in evidence.lines.iter() {
        let Some(event) = line.subagent_event() else { continue };
        let id = event.subagent_id.unwrap_or("?");
        let seq = line.seq.unwrap_or_default();
        let status = event.status.unwrap_or("?");
        let without = |missing: Vec<&str>| format!("{id} is `{status}` at seq {seq} without {}", missing.join(", "));
        let seed = missing(&line.data, &SEED_KEYS);
        if !seed.is_empty() {
            problems.push(Violation::new(without(seed)));
        }
        let pixir = missing(&line.data, pixir_keys(event.subagent_status()));
        if !pixir.is_empty() {
            problems.push(Violation::new(without(pixir)).of(REFERENCE));
        }
        if let (Some(path), Some(child)) = (event.child_log_path, event.child_session_id)
            && !path.ends_with(&format!("/{child}.ndjson"))
        {
            let message = format!("{id}'s child_log_path {path:?} at seq {seq} is not its child Session's Log");
            problems.push(Violation::new(message).of("SUB-CHILD-LOG"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check};

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
                "sub_1 is `timed_out` at seq 1 without event, agent",
                "sub_1 is `timed_out` at seq 1 without deadline_at",
                "sub_1's child_log_path \"/w/.gauntlet/sessions/other.ndjson\" at seq 1 is not its child Session's Log",
            ]
        );
    }
}
