//! SUB-COMPLETED-EVIDENCE: a Subagent is `completed` only with its evidence: its terminal
//! `subagent_event` carries a non-empty `summary` (or a `checkpoint`) (seed 000, ADR 0026
//! "Subagent terminal states": `completed` requires "summary or checkpoint evidence, elapsed
//! time when available"; the elapsed time is SUB-ELAPSED-TIME's). A child that ended with
//! nothing to show is not a completion the parent can build on.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use gauntlet_agent::event::SubagentStatus;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-COMPLETED-EVIDENCE",
    also: &[],
    name: "subagent_completed_evidence",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let events = evidence.lines.iter().filter_map(|line| Some((line.seq, line.subagent_event()?)));
    for (seq, event) in events.filter(|(_, event)| event.subagent_status() == Some(SubagentStatus::Completed)) {
        let id = event.subagent_id.unwrap_or("?");
        let seq = seq.unwrap_or_default();
        let summary = event.summary.is_some_and(|summary| !summary.trim().is_empty());
        let checkpoint = event.checkpoint.is_some_and(|checkpoint| !checkpoint.is_null());
        if !summary && !checkpoint {
            problems.push(format!("{id} is `completed` at seq {seq} without a summary or checkpoint evidence"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::{capture, check};

    #[test]
    fn a_completion_without_summary_or_checkpoint_is_caught() {
        let event = |data: Value| ("subagent_event", data);
        let capture = capture(
            &[
                event(json!({"subagent_id": "sub_1", "status": "completed", "summary": "done", "elapsed_ms": 5})),
                event(json!({"subagent_id": "sub_2", "status": "completed", "summary": " "})),
                event(json!({"subagent_id": "sub_3", "status": "failed"})),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            ["sub_2 is `completed` at seq 1 without a summary or checkpoint evidence"]
        );
    }
}
