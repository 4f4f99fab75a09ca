//! WF-OK-ONLY-COMPLETE: a Workflow is `ok: true` only when every step of its graph is
//! `checkpoint_ready`; a partial workflow is never reported as success, neither in its
//! `workflow_finished` event nor in the `run_workflow` tool result (ADR 0026 "Workflow `ok ==
//! true` is reserved for full completion"; ADR 0014).

use serde_json::Value;

use crate::audit::WorkflowTerminal;
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-OK-ONLY-COMPLETE",
    also: &["WF-RESULT"],
    name: "workflow_ok_only_when_complete",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for workflow in &evidence.audit.workflows {
        if workflow.ok == Some(true) && workflow.terminal_state != Some(WorkflowTerminal::Completed) {
            let not_ready: Vec<String> = workflow
                .steps
                .iter()
                .filter(|(_, status)| *status != "checkpoint_ready")
                .map(|(step, status)| format!("{step}: {status}"))
                .collect();
            problems.push(format!(
                "workflow {} finished ok: true, but its steps are not all checkpoint_ready ({})",
                workflow.workflow_id,
                not_ready.join(", ")
            ));
        }
    }
    for line in &evidence.lines {
        let Some(result) = line.tool_result() else { continue };
        let Some(workflow) = result.workflow else { continue };
        let id = workflow.get("workflow_id").and_then(Value::as_str).unwrap_or("?");
        let seq = line.seq.unwrap_or_default();
        let not_ready: Vec<&str> = workflow
            .get("steps")
            .and_then(Value::as_array)
            .map(|steps| {
                steps
                    .iter()
                    .filter(|step| step.get("checkpoint_status").and_then(Value::as_str) != Some("checkpoint_ready"))
                    .filter_map(|step| step.get("step_id").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let ok = workflow.get("ok").and_then(Value::as_bool) == Some(true);
        let completed = workflow.get("status").and_then(Value::as_str) == Some("completed");
        if (ok || completed) && !not_ready.is_empty() {
            problems.push(format!(
                "the run_workflow result at seq {seq} claims workflow {id} complete, but steps {} are not checkpoint_ready",
                not_ready.join(", ")
            ));
        }
        let output = result.output.unwrap_or_default();
        if !ok && output.contains(" completed") {
            problems.push(format!(
                "the run_workflow result at seq {seq} is not ok, but its output says completed: {output:?}"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    /// The hand-made capture of the acceptance criteria: a partial workflow reporting ok.
    #[test]
    fn a_partial_workflow_that_reports_ok_is_caught() {
        let capture = capture(
            &[
                (
                    "workflow_event",
                    json!({"kind": "workflow_started", "workflow_id": "wf_1", "graph": {"steps": [{"id": "a"}, {"id": "b"}]}}),
                ),
                (
                    "workflow_event",
                    json!({"kind": "checkpoint_decided", "workflow_id": "wf_1", "step_id": "a", "checkpoint_status": "checkpoint_ready"}),
                ),
                (
                    "workflow_event",
                    json!({"kind": "checkpoint_decided", "workflow_id": "wf_1", "step_id": "b", "checkpoint_status": "failed"}),
                ),
                (
                    "workflow_event",
                    json!({"kind": "workflow_finished", "workflow_id": "wf_1", "ok": true, "status": "completed"}),
                ),
                (
                    "tool_result",
                    json!({"call_id": "c", "ok": true, "output": "Workflow wf_1 completed: 2 step(s), 1 wave(s).",
                    "workflow": {"workflow_id": "wf_1", "ok": true, "status": "completed", "steps": [
                        {"step_id": "a", "checkpoint_status": "checkpoint_ready"}, {"step_id": "b", "checkpoint_status": "failed"}]}}),
                ),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow wf_1 finished ok: true, but its steps are not all checkpoint_ready (b: failed)",
                "the run_workflow result at seq 4 claims workflow wf_1 complete, but steps b are not checkpoint_ready",
            ]
        );
    }
}
