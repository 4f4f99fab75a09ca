//! WF-STEP-OUTCOME: each Step Outcome of a `run_workflow` result tells its step as the Log
//! does (seed 001, ADR 0014 "Step Outcome": step id, agent id, child Session id, wave, raw
//! Subagent status, derived checkpoint status, summary, "elapsed time when available; error
//! kind/details when terminal failure occurred"). A step that ran names a wave and a Subagent
//! whose last `subagent_event` before the result gives its child Session, status and summary,
//! and its elapsed time when the step gives one; a Subagent that ended without completing
//! gives the step an `error` with a kind and details. Also WF-CHECKPOINT and WF-HELD as seed
//! 001 defines them: a step whose Subagent did not complete is never `checkpoint_ready`, a step
//! that ran is never `held`, and a step never started is `held`, with no elapsed time of its
//! own. How pixir.md 8 fills each in (the actions, the error's kind, a checkpoint a summary
//! declares) is WF-OUTCOME-DETAILS'; that a step that ran gives its elapsed time, SUB-ELAPSED-TIME's.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{WorkflowRun, text, workflow_runs};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-STEP-OUTCOME",
    also: &["WF-CHECKPOINT", "WF-HELD"],
    name: "workflow_step_outcomes",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// The reason a workflow's deadline gives the Subagents it closes (WF-TIMEOUT).
const CLOSED_BY_WORKFLOW: &str = "closed_by_workflow_timeout";

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        for step in run.steps() {
            let step_id = text(step, "step_id");
            let prefix = format!("{} step `{step_id}`", run.name());
            problems.extend(judge_step(&run, step).into_iter().map(|problem| format!("{prefix}: {problem}")));
        }
    }
    problems
}

fn judge_step(run: &WorkflowRun, step: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let checkpoint = text(step, "checkpoint_status");
    if step.get("agent_id").is_none_or(Value::is_null) {
        if checkpoint != "held" || text(step, "status") != "held" {
            problems
                .push(format!("never ran, but is `{}` with checkpoint `{checkpoint}`, not held", text(step, "status")));
        }
        if let Some(key) = ["elapsed_ms", "timeout_ms", "error"].into_iter().find(|key| step.get(*key).is_some()) {
            problems.push(format!("never ran, but has `{key}`"));
        }
        return problems;
    }
    let agent_id = text(step, "agent_id");
    let Some(subagent) = run.subagent_of(step) else {
        problems.push(format!("names Subagent `{agent_id}`, which no subagent_event before the result records"));
        return problems;
    };
    if step.get("wave").is_none_or(|wave| wave.as_u64().is_none()) {
        problems.push("ran, but names no wave".to_owned());
    }
    for (key, theirs) in
        [("child_session_id", "child_session_id"), ("subagent_status", "status"), ("summary", "summary")]
    {
        if step.get(key) != subagent.get(theirs) {
            problems.push(format!(
                "`{key}` is {}, but its Subagent {agent_id}'s last subagent_event says {}",
                step.get(key).unwrap_or(&Value::Null),
                subagent.get(theirs).unwrap_or(&Value::Null)
            ));
        }
    }
    if let (Some(mine), Some(theirs)) =
        (step.get("elapsed_ms").and_then(Value::as_u64), subagent.get("elapsed_ms").and_then(Value::as_u64))
        && mine != theirs
    {
        problems.push(format!("`elapsed_ms` is {mine}, but its Subagent {agent_id} ran {theirs} ms"));
    }
    let subagent_status = text(subagent, "status");
    let error = step.get("error").filter(|error| !error.is_null());
    if subagent_status == "completed" {
        if error.is_some() {
            problems.push(format!("its Subagent {agent_id} completed, but the step carries an `error`"));
        }
    } else {
        let kind = error.map(|error| text(error, "kind")).unwrap_or_default();
        let details = error.map(|error| text(error, "details")).unwrap_or_default();
        if kind.is_empty() || details.is_empty() {
            problems.push(format!(
                "its Subagent {agent_id} ended `{subagent_status}` ({}), but the step's error is {}",
                text(subagent, "reason"),
                error.unwrap_or(&Value::Null)
            ));
        }
        if checkpoint == "checkpoint_ready" {
            problems.push(format!("its Subagent {agent_id} ended `{subagent_status}`, but its checkpoint is ready"));
        }
    }
    if checkpoint == "held" {
        problems.push(format!("ran as Subagent {agent_id}, but is held"));
    }
    let closed = subagent_status == "cancelled" && text(subagent, "reason") == CLOSED_BY_WORKFLOW;
    let status = if closed || subagent_status == "timed_out" { "timed_out" } else { subagent_status };
    if text(step, "status") != status {
        problems.push(format!("its status is `{}`, but its Subagent's end makes it `{status}`", text(step, "status")));
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::{check, failed_workflow};

    fn step_a(edit: impl FnOnce(&mut Value)) -> Vec<String> {
        check(INVARIANT, &failed_workflow(|result| edit(&mut result["workflow"]["steps"][0])))
    }

    #[test]
    fn a_failed_step_without_its_error_or_with_a_ready_checkpoint_is_caught() {
        assert_eq!(step_a(|_| {}), Vec::<String>::new());
        let dishonest = step_a(|step| {
            step["checkpoint_status"] = json!("checkpoint_ready");
            step["elapsed_ms"] = json!(9);
            step.as_object_mut().map(|step| step.remove("error"));
        });
        assert_eq!(
            dishonest,
            [
                "workflow wf_1 (seq 3) step `a`: `elapsed_ms` is 9, but its Subagent sub_1 ran 7 ms",
                "workflow wf_1 (seq 3) step `a`: its Subagent sub_1 ended `failed` (provider_error), but the step's error is null",
                "workflow wf_1 (seq 3) step `a`: its Subagent sub_1 ended `failed`, but its checkpoint is ready",
            ]
        );
    }

    #[test]
    fn what_the_seed_leaves_open_is_not_judged_here() {
        let pixir_details = step_a(|step| {
            step["wave"] = json!(0);
            step["error"]["kind"] = json!("timeout");
            step["safe_next_actions"] = json!(["retry"]);
            step.as_object_mut().map(|step| step.remove("elapsed_ms"));
        });
        assert_eq!(pixir_details, Vec::<String>::new(), "WF-OUTCOME-DETAILS' and SUB-ELAPSED-TIME's");
    }
}
