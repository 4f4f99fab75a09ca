//! The structured outcome of `wait_agent`: per-status buckets, never a bare success
//! (ADR 0026 "a parent wait must not report success merely because a child exists"; pixir.md 7;
//! SUB-WAIT-OUTCOME). A partial fan-out is data for the model, not a tool error.

use serde_json::{Value, json};

use crate::event::SubagentStatus;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// Every child completed.
    Completed,
    /// Every child ended, and at least one did not complete.
    Partial,
    /// At least one child was still queued or running when the wait expired.
    Incomplete,
}

impl WaitStatus {
    /// The contract string.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitStatus::Completed => "completed",
            WaitStatus::Partial => "partial",
            WaitStatus::Incomplete => "incomplete",
        }
    }
}

/// The buckets a child falls in; `closed` counts as cancelled.
const BUCKETS: [&str; 6] = ["completed", "failed", "timed_out", "cancelled", "detached", "incomplete"];

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

/// The outcome of waiting `timeout_ms` on `children` (`(subagent id, status)` in spawn order).
pub fn outcome(children: &[(String, SubagentStatus)], timeout_ms: u64) -> (WaitStatus, Value) {
    let in_bucket = |name: &str| -> Vec<&str> {
        children.iter().filter(|(_, status)| bucket(*status) == name).map(|(id, _)| id.as_str()).collect()
    };
    let n_incomplete = in_bucket("incomplete").len();
    let n_completed = in_bucket("completed").len();
    let status = if n_incomplete > 0 {
        WaitStatus::Incomplete
    } else if n_completed == children.len() {
        WaitStatus::Completed
    } else {
        WaitStatus::Partial
    };
    let counts: serde_json::Map<String, Value> =
        BUCKETS.iter().map(|name| ((*name).to_owned(), json!(in_bucket(name).len()))).collect();
    let listed = BUCKETS
        .iter()
        .filter(|name| !in_bucket(name).is_empty())
        .map(|name| format!("{} {name}", in_bucket(name).len()))
        .collect::<Vec<_>>()
        .join(", ");
    let summary = match status {
        WaitStatus::Completed => format!("wait_agent completed: {} subagents.", children.len()),
        WaitStatus::Partial => format!("wait_agent partial: {listed}."),
        WaitStatus::Incomplete => format!("wait_agent incomplete after {timeout_ms}ms: {listed}."),
    };
    let mut next_actions = Vec::new();
    if !in_bucket("failed").is_empty() || !in_bucket("timed_out").is_empty() {
        next_actions.push("inspect_child_session_log");
        next_actions.push("retry_failed_subagents_or_synthesize_partial");
    }
    if !in_bucket("detached").is_empty() {
        next_actions.push("inspect_detached_child_session_log");
    }
    if n_incomplete > 0 {
        next_actions.extend(["wait_again", "inspect_child_log_if_stale"]);
    }
    let mut outcome = json!({
        "status": status.as_str(),
        "complete": status == WaitStatus::Completed,
        "partial": status != WaitStatus::Completed,
        "timeout_ms": timeout_ms,
        "counts": counts,
        "next_actions": next_actions,
        "summary": summary,
    });
    for name in BUCKETS {
        outcome[name] = json!(in_bucket(name));
    }
    (status, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn children(statuses: &[SubagentStatus]) -> Vec<(String, SubagentStatus)> {
        statuses.iter().enumerate().map(|(idx, status)| (format!("sub_{}", idx + 1), *status)).collect()
    }

    #[test]
    fn a_mixed_fan_out_is_partial_with_buckets() {
        let (status, outcome) =
            outcome(&children(&[SubagentStatus::Completed, SubagentStatus::TimedOut, SubagentStatus::Closed]), 1000);
        assert_eq!(status, WaitStatus::Partial);
        assert_eq!(outcome["completed"], json!(["sub_1"]));
        assert_eq!(outcome["timed_out"], json!(["sub_2"]));
        assert_eq!(outcome["cancelled"], json!(["sub_3"]));
        assert_eq!(outcome["complete"], false);
        assert_eq!(outcome["summary"], "wait_agent partial: 1 completed, 1 timed_out, 1 cancelled.");
    }

    #[test]
    fn a_running_child_makes_the_wait_incomplete_and_all_completed_is_completed() {
        let (status, outcome) = outcome(&children(&[SubagentStatus::Completed, SubagentStatus::Running]), 500);
        assert_eq!(status, WaitStatus::Incomplete);
        assert_eq!(outcome["summary"], "wait_agent incomplete after 500ms: 1 completed, 1 incomplete.");
        assert!(outcome["next_actions"].as_array().unwrap().contains(&json!("wait_again")));
        let (status, all_done) = super::outcome(&children(&[SubagentStatus::Completed; 2]), 500);
        assert_eq!(status, WaitStatus::Completed);
        assert_eq!(all_done["summary"], "wait_agent completed: 2 subagents.");
    }
}
