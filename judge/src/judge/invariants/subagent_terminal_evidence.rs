//! SUB-TERMINAL-EVIDENCE: each `subagent_event` carries the evidence seed 000 (ADR 0026
//! "Subagent terminal states") asks of its status: every one the child's id, its child Session
//! and a status the seed names (SUB-LIFECYCLE); a failed child its `reason` and
//! `next_actions`; a timed-out one `timeout_ms`, `elapsed_ms`, `reason` and `next_actions`
//! (SUB-TIMEOUT-EVIDENCE); a cancelled one its `reason`; a detached one how to inspect or
//! resume it (`next_actions`). A child whose own Log does not show a completed Turn is never
//! `completed` in its parent (SUB-PARTIAL-NOT-COMPLETED). Pixir's transition table is the
//! reference's (SUB-REF-DETAILS, a MAY); the further keys pixir.md 7 gives are
//! SUB-EVENT-FIELDS'.

use gauntlet_agent::TerminalStatus;
use gauntlet_agent::event::SubagentStatus;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::missing;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-TERMINAL-EVIDENCE",
    also: &[TIMEOUT, LIFECYCLE, PARTIAL, REFERENCE],
    name: "subagent_terminal_evidence",
    applies: Scope::Log,
    check,
};

const TIMEOUT: &str = "SUB-TIMEOUT-EVIDENCE";
const LIFECYCLE: &str = "SUB-LIFECYCLE";
const PARTIAL: &str = "SUB-PARTIAL-NOT-COMPLETED";
const REFERENCE: &str = "SUB-REF-DETAILS";

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    let mut last: Vec<(String, SubagentStatus)> = Vec::new();
    for line in evidence.lines.iter() {
        let Some(event) = line.subagent_event() else { continue };
        let seq = line.seq.unwrap_or_default();
        let Some(id) = event.subagent_id.filter(|id| !id.is_empty()) else {
            // Seed 000 asks every terminal state for the child's identity (issue 31: an event
            // without it was skipped unread).
            problems.push(Violation::new(format!("subagent_event at seq {seq} names no `subagent_id`")));
            continue;
        };
        let Some(status) = event.subagent_status() else {
            let message = format!("subagent_event at seq {seq} ({id}) has no known `status`");
            problems.push(Violation::new(message).of(LIFECYCLE));
            continue;
        };
        match last.iter_mut().find(|(known, _)| known == id) {
            Some((_, previous)) => {
                if !previous.can_become(status) {
                    let message =
                        format!("{id} goes from `{previous}` to `{status}` at seq {seq}, which the lifecycle forbids");
                    problems.push(Violation::new(message).of(REFERENCE));
                }
                *previous = status;
            }
            None => last.push((id.to_owned(), status)),
        }
        let missing = missing(&line.data, seed_evidence(status));
        if !missing.is_empty() {
            let message = Violation::new(format!("{id} is `{status}` at seq {seq} without {}", missing.join(", ")));
            problems.push(if status == SubagentStatus::TimedOut { message.of(TIMEOUT) } else { message });
        }
    }
    for subagent in &evidence.audit.subagents {
        if subagent.status == Some(SubagentStatus::Completed)
            && subagent.child_turn.is_some_and(|turn| turn != TerminalStatus::Completed)
        {
            let message = format!(
                "{} is `completed` in the parent's Log, but its own Log shows its Turn `{}`",
                subagent.subagent_id,
                subagent.child_turn.map_or("-", TerminalStatus::as_str)
            );
            problems.push(Violation::new(message).of(PARTIAL));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
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

    /// Seed 000 asks the child's identity; the transition table is Pixir's (issue 31).
    #[test]
    fn an_event_without_its_child_id_is_caught_and_a_transition_is_the_references() {
        use crate::judge::fixture::check_as;
        let event = |status: &str, id: &str| {
            ("subagent_event", json!({"status": status, "subagent_id": id, "child_session_id": "c"}))
        };
        let again = capture(&[event("running", ""), event("completed", "s1"), event("running", "s1")], &[]);
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &again), ["subagent_event at seq 0 names no `subagent_id`"]);
        assert_eq!(check_as(INVARIANT, REFERENCE, &again), Vec::<String>::new(), "an ended child may run again");
        let back = capture(&[event("completed", "s1"), event("queued", "s1")], &[]);
        assert_eq!(
            check_as(INVARIANT, REFERENCE, &back),
            ["s1 goes from `completed` to `queued` at seq 1, which the lifecycle forbids"]
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
