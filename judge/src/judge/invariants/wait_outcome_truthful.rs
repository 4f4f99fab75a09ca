//! SUB-WAIT-OUTCOME: a `wait_agent` result never reads as success because a child exists (seed
//! 000: "a parent wait must not report success merely because a child exists"): no child it
//! lists `completed` did not complete, and it reports `completed` (or `complete: true`) only when
//! every child completed.
//!
//! The rest is how the reference tells each child (pixir.md 7: SUB-REF-DETAILS, a MAY; another
//! runtime may shape its outcome otherwise). Each child the wait lists is in the bucket of its last
//! `subagent_event` before the result (`closed` counts as cancelled, queued or running as
//! incomplete), every child the call named is in exactly one bucket, each count is its bucket's
//! length, and the status follows from the buckets: `incomplete` while one still runs,
//! `completed` only when every child completed (then `complete` is true), else `partial`.
//! Its summary line names the status and each non-empty bucket with its count, and its next
//! actions are there exactly when something is left to do: inspect a failed or timed-out
//! child, inspect a detached one, wait again while one runs (pixir.md 7).

use std::collections::HashMap;

use gauntlet_agent::EventType;
use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::strings;

pub const INVARIANT: Invariant =
    Invariant { id: "SUB-WAIT-OUTCOME", also: &[REFERENCE], name: "wait_outcome_truthful", applies: Scope::Log, check };

/// What a wait that claims no false success, but tells its children otherwise than the
/// reference, breaks.
const REFERENCE: &str = "SUB-REF-DETAILS";

/// The buckets of a wait's outcome, in the contract's order.
const BUCKETS: [&str; 6] = ["completed", "failed", "timed_out", "cancelled", "detached", "incomplete"];

/// The bucket a child with this `subagent_event` status belongs in.
fn bucket(status: SubagentStatus) -> &'static str {
    match status {
        SubagentStatus::Completed => "completed",
        SubagentStatus::Failed => "failed",
        SubagentStatus::TimedOut => "timed_out",
        SubagentStatus::Cancelled | SubagentStatus::Closed => "cancelled",
        SubagentStatus::Detached => "detached",
        SubagentStatus::Queued | SubagentStatus::Running => "incomplete",
    }
}

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    let mut status: HashMap<&str, &str> = HashMap::new();
    // The children each wait call named, by call id.
    let mut waits: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in &evidence.lines {
        let seq = line.seq.map_or_else(|| "?".to_owned(), |seq| seq.to_string());
        match line.kind.known() {
            Some(EventType::SubagentEvent) => {
                let Some(event) = line.subagent_event() else { continue };
                if let (Some(id), Some(now)) = (event.subagent_id, event.status) {
                    status.insert(id, now);
                }
            }
            Some(EventType::ToolCall) => {
                let Some(call) = line.tool_call().filter(|call| call.name == Some("wait_agent")) else { continue };
                let named = call.args.and_then(|args| args.get("ids")?.as_array());
                let named = named.map(|ids| ids.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                if let Some(call) = call.call_id {
                    waits.insert(call, named);
                }
            }
            Some(EventType::ToolResult) => {
                let Some(result) = line.tool_result() else { continue };
                let Some(named) = result.call_id.and_then(|call| waits.get(call)) else { continue };
                let Some(outcome) = result.outcome.filter(|outcome| outcome.is_object()) else { continue };
                let context = format!("seq {seq}: ");
                let found = judge_outcome(outcome, named, &status);
                problems.extend(found.into_iter().map(|problem| problem.in_context(&context)));
            }
            _ => {}
        }
    }
    problems
}

/// What is wrong with one wait's `outcome`, given the children it named and each child's last
/// status: a claimed success is the MUST's, the rest the reference's shape.
fn judge_outcome(outcome: &Value, named: &[&str], status: &HashMap<&str, &str>) -> Vec<Violation> {
    let claims = |claims_success: bool, message: String| {
        if claims_success { Violation::new(message) } else { Violation::new(message).of(REFERENCE) }
    };
    let mut problems = Vec::new();
    let mut listed: HashMap<&str, &str> = HashMap::new();
    for name in BUCKETS {
        let ids: Vec<&str> = outcome
            .get(name)
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |ids| ids.iter().filter_map(Value::as_str).collect());
        let count = outcome.pointer(&format!("/counts/{name}")).and_then(Value::as_u64);
        if count.is_some_and(|count| usize::try_from(count).ok() != Some(ids.len())) {
            problems.push(claims(
                false,
                format!("wait_agent counts {} `{name}`, but its `{name}` bucket lists {ids:?}", count.unwrap_or(0)),
            ));
        }
        for id in ids {
            if let Some(earlier) = listed.insert(id, name) {
                problems.push(claims(false, format!("wait_agent lists {id} both as `{earlier}` and as `{name}`")));
            }
            let truth = status.get(id).copied();
            match truth.and_then(SubagentStatus::parse).map(bucket) {
                Some(right) if right != name => problems.push(claims(
                    name == "completed",
                    format!(
                        "wait_agent lists {id} as `{name}`, but its last subagent_event says `{}`",
                        truth.unwrap_or_default()
                    ),
                )),
                None => problems.push(claims(
                    name == "completed",
                    format!("wait_agent lists {id} as `{name}`, but no subagent_event gives its status"),
                )),
                _ => {}
            }
        }
    }
    for id in named.iter().filter(|id| !listed.contains_key(**id)) {
        problems.push(claims(false, format!("wait_agent was asked for {id} but lists it in no bucket")));
    }
    let in_bucket = |name: &str| listed.values().filter(|bucket| **bucket == name).count();
    let expected = if in_bucket("incomplete") > 0 {
        "incomplete"
    } else if !listed.is_empty() && in_bucket("completed") == listed.len() {
        "completed"
    } else {
        "partial"
    };
    let reported = outcome.get("status").and_then(Value::as_str).unwrap_or("(none)");
    if reported != expected {
        let message = format!("wait_agent reports `{reported}`, but its buckets make it `{expected}`");
        problems.push(claims(reported == "completed", message));
    }
    if outcome.get("complete").and_then(Value::as_bool) == Some(true) && expected != "completed" {
        problems.push(claims(true, "wait_agent says `complete: true` though not every child completed".to_owned()));
    }
    problems.extend(judge_summary(outcome, expected, &in_bucket).into_iter().map(|problem| claims(false, problem)));
    problems
}

/// The summary line and next actions of a wait whose buckets make it `expected`.
fn judge_summary(outcome: &Value, expected: &str, in_bucket: &dyn Fn(&str) -> usize) -> Vec<String> {
    let mut problems = Vec::new();
    let summary = outcome.get("summary").and_then(Value::as_str).unwrap_or_default();
    let head = format!("wait_agent {expected}");
    let unnamed: Vec<String> = BUCKETS
        .iter()
        .filter(|name| expected != "completed" && in_bucket(name) > 0)
        .map(|name| format!("{} {name}", in_bucket(name)))
        .filter(|phrase| !summary.contains(phrase.as_str()))
        .collect();
    if !summary.starts_with(&head) || !unnamed.is_empty() {
        problems.push(format!("wait_agent's summary {summary:?} does not say `{head}` with {unnamed:?}"));
    }
    let actions = strings(outcome, "next_actions");
    let needs = [
        (in_bucket("failed") + in_bucket("timed_out") > 0, "inspect_child_session_log"),
        (in_bucket("detached") > 0, "inspect_detached_child_session_log"),
        (in_bucket("incomplete") > 0, "wait_again"),
    ];
    for (needed, action) in needs {
        if needed != actions.contains(&action) {
            let verb = if needed { "lacks" } else { "offers" };
            problems.push(format!("wait_agent's next actions {actions:?} {verb} `{action}`"));
        }
    }
    if expected == "completed" && !actions.is_empty() {
        problems.push(format!("wait_agent completed, but offers next actions {actions:?}"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check};

    fn waited(outcome: Value) -> Vec<String> {
        check(INVARIANT, &waited_on(outcome))
    }

    fn waited_on(outcome: Value) -> crate::capture::Capture {
        let event = |id: &str, status: &str| ("subagent_event", json!({"subagent_id": id, "status": status}));
        capture(
            &[
                ("user_message", json!({"text": "fan out"})),
                event("sub_1", "completed"),
                event("sub_2", "timed_out"),
                ("tool_call", json!({"call_id": "c1", "name": "wait_agent", "args": {"ids": ["sub_1", "sub_2"]}})),
                ("tool_result", json!({"call_id": "c1", "ok": true, "outcome": outcome})),
            ],
            &[],
        )
    }

    fn outcome(completed: &[&str], timed_out: &[&str], status: &str, complete: bool) -> Value {
        json!({
            "status": status, "complete": complete,
            "counts": {"completed": completed.len(), "failed": 0, "timed_out": timed_out.len(), "cancelled": 0, "detached": 0, "incomplete": 0},
            "completed": completed, "failed": [], "timed_out": timed_out, "cancelled": [], "detached": [], "incomplete": [],
            "summary": if status == "completed" { format!("wait_agent completed: {} subagents.", completed.len()) }
                else { format!("wait_agent {status}: {} completed, {} timed_out.", completed.len(), timed_out.len()) },
            "next_actions": if timed_out.is_empty() { json!([]) } else { json!(["inspect_child_session_log"]) },
        })
    }

    /// Only a claimed success is the seed's MUST; the rest of the outcome's shape is Pixir's
    /// (issue 31).
    #[test]
    fn only_a_claimed_success_is_the_musts() {
        use crate::judge::fixture::check_as;
        let claimed = waited_on(outcome(&["sub_1"], &["sub_2"], "completed", true));
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &claimed).len(), 2);
        let mut miscounted = outcome(&["sub_1"], &["sub_2"], "partial", false);
        miscounted["counts"]["timed_out"] = json!(2);
        miscounted["next_actions"] = json!([]);
        let honest = waited_on(miscounted);
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &honest), Vec::<String>::new());
        assert_eq!(check_as(INVARIANT, REFERENCE, &honest).len(), 2);
    }

    #[test]
    fn a_truthful_partial_wait_holds() {
        assert!(waited(outcome(&["sub_1"], &["sub_2"], "partial", false)).is_empty());
    }

    #[test]
    fn a_timed_out_child_counted_completed_and_a_wait_reported_completed_are_caught() {
        assert_eq!(
            waited(outcome(&["sub_1", "sub_2"], &[], "completed", true)),
            ["seq 4: wait_agent lists sub_2 as `completed`, but its last subagent_event says `timed_out`"]
        );
        assert_eq!(
            waited(outcome(&["sub_1"], &["sub_2"], "completed", true)),
            [
                "seq 4: wait_agent reports `completed`, but its buckets make it `partial`",
                "seq 4: wait_agent says `complete: true` though not every child completed",
                "seq 4: wait_agent's summary \"wait_agent completed: 1 subagents.\" does not say `wait_agent partial` with [\"1 completed\", \"1 timed_out\"]",
            ]
        );
        let mut miscounted = outcome(&["sub_1"], &[], "partial", false);
        miscounted["counts"]["timed_out"] = json!(1);
        assert_eq!(
            waited(miscounted),
            [
                "seq 4: wait_agent counts 1 `timed_out`, but its `timed_out` bucket lists []",
                "seq 4: wait_agent was asked for sub_2 but lists it in no bucket",
                "seq 4: wait_agent reports `partial`, but its buckets make it `completed`",
                "seq 4: wait_agent's summary \"wait_agent partial: 1 completed, 0 timed_out.\" does not say `wait_agent completed` with []",
            ]
        );
    }
}
