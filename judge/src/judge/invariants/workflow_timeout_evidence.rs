//! WF-TIMEOUT: a step whose own Subagent timed out says so with its evidence (seed 000, ADR
//! 0026 "timed_out": "Timeout step evidence propagated from Subagents"): it is `timed_out` with
//! checkpoint `failed`, `timeout_ms`, `elapsed_ms` and next actions.
//!
//! How the workflow's own deadline ends a run is pixir.md 8's (WF-REF-DETAILS, a MAY): a step
//! whose Subagent the deadline closed (its last `subagent_event` `cancelled` with reason
//! `closed_by_workflow_timeout`) is reported the same way, and only such a step gives that
//! reason; a step held for `workflow_timeout` is held in a workflow whose deadline closed a
//! step, and once it did, a step not started whose dependencies were all ready is held for
//! `workflow_timeout`.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{WorkflowRun, text, workflow_runs};

pub const INVARIANT: Invariant =
    Invariant { id: "WF-TIMEOUT", also: &[REFERENCE], name: "workflow_timeout_evidence", applies: Scope::Log, check };

/// What a workflow whose deadline ends otherwise than the reference's breaks.
const REFERENCE: &str = "WF-REF-DETAILS";

const CLOSED_BY_WORKFLOW: &str = "closed_by_workflow_timeout";

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        let context = format!("{}: ", run.name());
        problems.extend(judge_run(&run).into_iter().map(|problem| problem.in_context(&context)));
    }
    problems
}

/// What is wrong with one run: the seed's evidence of a step's own timeout, or the reference's
/// deadline.
fn judge_run(run: &WorkflowRun) -> Vec<Violation> {
    let reference = |message: String| Violation::new(message).of(REFERENCE);
    let mut problems = Vec::new();
    let mut deadline_closed = false;
    for step in run.steps() {
        let step_id = text(step, "step_id");
        let subagent = run.subagent_of(step);
        let end = subagent.map(|subagent| (text(subagent, "status"), text(subagent, "reason")));
        let closed = end == Some(("cancelled", CLOSED_BY_WORKFLOW));
        deadline_closed |= closed;
        if text(step, "reason") == CLOSED_BY_WORKFLOW && !closed {
            problems.push(reference(format!(
                "step `{step_id}` says {CLOSED_BY_WORKFLOW}, but its Subagent's last subagent_event is {}",
                subagent.map_or_else(|| "missing".to_owned(), |subagent| format!("`{}`", text(subagent, "status")))
            )));
        }
        let own_timeout = end.is_some_and(|(status, _)| status == "timed_out");
        if !closed && !own_timeout {
            continue;
        }
        let cause = if closed { "the workflow's deadline closed its Subagent" } else { "its Subagent timed out" };
        // A step's own timeout is the seed's; the deadline's close, the reference's.
        let of_cause = |message: String| if own_timeout { Violation::new(message) } else { reference(message) };
        if text(step, "status") != "timed_out" || text(step, "checkpoint_status") != "failed" {
            problems.push(of_cause(format!(
                "{cause}, but step `{step_id}` is `{}` with checkpoint `{}`, not timed_out and failed",
                text(step, "status"),
                text(step, "checkpoint_status")
            )));
        }
        if closed && text(step, "reason") != CLOSED_BY_WORKFLOW {
            problems.push(reference(format!("{cause}, but step `{step_id}` gives reason `{}`", text(step, "reason"))));
        }
        let missing: Vec<&str> = ["timeout_ms", "elapsed_ms"]
            .into_iter()
            .filter(|key| !step.get(*key).is_some_and(Value::is_u64))
            .chain(
                step.get("next_actions").and_then(Value::as_array).is_none_or(Vec::is_empty).then_some("next_actions"),
            )
            .collect();
        if !missing.is_empty() {
            problems.push(of_cause(format!("{cause}, but step `{step_id}` has no {}", missing.join(", "))));
        }
    }
    let checkpoint_of = |id: &str| {
        run.steps().iter().find(|step| text(step, "step_id") == id).map(|step| text(step, "checkpoint_status"))
    };
    for step in run.steps().iter().filter(|step| step.get("agent_id").is_none_or(Value::is_null)) {
        let step_id = text(step, "step_id");
        let held_reason = text(step, "held_reason");
        if held_reason == "workflow_timeout" && !deadline_closed {
            let message =
                format!("step `{step_id}` is held for workflow_timeout, but no step was closed by the deadline");
            problems.push(reference(message));
        }
        let dependencies = run
            .graph
            .iter()
            .find(|node| text(node, "id") == step_id)
            .and_then(|node| node.get("depends_on"))
            .and_then(Value::as_array);
        let all_ready = dependencies
            .into_iter()
            .flatten()
            .all(|dependency| dependency.as_str().and_then(checkpoint_of) == Some("checkpoint_ready"));
        if deadline_closed && all_ready && held_reason != "workflow_timeout" {
            problems.push(reference(format!(
                "the deadline closed the workflow before step `{step_id}` started, but it is held for `{held_reason}`, not workflow_timeout"
            )));
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
    fn a_closed_step_reported_completed_and_a_hold_without_its_reason_are_caught() {
        let capture = capture(
            &[
                (
                    "workflow_event",
                    json!({"kind": "workflow_started", "workflow_id": "wf_1", "graph": {"steps": [{"id": "slow", "depends_on": []}, {"id": "next", "depends_on": []}]}}),
                ),
                (
                    "subagent_event",
                    json!({"subagent_id": "sub_1", "status": "cancelled", "reason": CLOSED_BY_WORKFLOW}),
                ),
                (
                    "tool_result",
                    json!({"call_id": "c", "workflow": {"workflow_id": "wf_1", "steps": [
                        {"step_id": "slow", "agent_id": "sub_1", "status": "cancelled", "checkpoint_status": "failed", "timeout_ms": 5, "elapsed_ms": 5},
                        {"step_id": "next", "agent_id": null, "status": "held", "checkpoint_status": "held", "held_reason": "dependency_not_checkpoint_ready"},
                    ]}}),
                ),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow wf_1 (seq 2): the workflow's deadline closed its Subagent, but step `slow` is `cancelled` with checkpoint `failed`, not timed_out and failed",
                "workflow wf_1 (seq 2): the workflow's deadline closed its Subagent, but step `slow` gives reason ``",
                "workflow wf_1 (seq 2): the workflow's deadline closed its Subagent, but step `slow` has no next_actions",
                "workflow wf_1 (seq 2): the deadline closed the workflow before step `next` started, but it is held for `dependency_not_checkpoint_ready`, not workflow_timeout",
            ]
        );
        // The deadline's close is pixir.md 8's: none of it is the seed's MUST (issue 31).
        let found = crate::judge::fixture::check_as(INVARIANT, INVARIANT.id, &capture);
        assert_eq!(found, Vec::<String>::new());
    }
}
