//! WF-STEP-OUTCOME: each Step Outcome of a `run_workflow` result tells its step as the Log
//! does (seed 001, ADR 0014 "Step Outcome": step id, agent id, child Session id, wave, raw
//! Subagent status, derived checkpoint status, summary, "elapsed time when available; error
//! kind/details when terminal failure occurred"). A step that ran names a Subagent whose last
//! `subagent_event` before the result gives its child Session, status, summary and elapsed
//! time; a Subagent that ended without completing gives the step an `error` whose kind is its
//! terminal reason. Also WF-CHECKPOINT: the derived `checkpoint_status` is `checkpoint_ready`
//! for a completed Subagent unless its summary declares `checkpoint_status: partial`, `failed`
//! or `needs_orchestrator`, and `failed` for every other end; a step never started is `held`,
//! with no elapsed time of its own. Each step's safe next actions are pixir.md 8's for its
//! checkpoint: none when ready, a retry when failed or timed out, a rerun when held.

use serde_json::Value;

use super::{Invariant, Scope, WorkflowRun, strings, text, workflow_runs};
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "WF-STEP-OUTCOME",
    also: &["WF-CHECKPOINT", "WF-HELD"],
    name: "workflow_step_outcomes",
    scope: Scope::Log,
    check,
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

/// pixir.md 8's step-level safe next actions for a step so decided.
fn safe_next_actions(checkpoint: &str, status: &str, held_reason: &str) -> &'static [&'static str] {
    match checkpoint {
        "checkpoint_ready" => &[],
        "partial" => &["synthesize_from_partial_or_retry_step"],
        "needs_orchestrator" => &["ask_user_or_orchestrator"],
        "failed" if status == "timed_out" => &["retry_failed_step"],
        "failed" => &["inspect_step_failure", "retry_failed_step"],
        "held" if held_reason == "workflow_timeout" => &["retry_workflow_with_larger_timeout"],
        _ => &["rerun_after_dependencies_checkpoint_ready"],
    }
}

fn judge_step(run: &WorkflowRun, step: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let checkpoint = text(step, "checkpoint_status");
    let expected_actions = safe_next_actions(checkpoint, text(step, "status"), text(step, "held_reason"));
    let actions = strings(step, "safe_next_actions");
    if actions != expected_actions {
        problems.push(format!(
            "its safe next actions are {actions:?}, but a `{checkpoint}` step's are {expected_actions:?}"
        ));
    }
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
    if step.get("wave").is_none_or(|wave| wave.as_u64().is_none_or(|wave| wave == 0)) {
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
    match (step.get("elapsed_ms").and_then(Value::as_u64), subagent.get("elapsed_ms").and_then(Value::as_u64)) {
        (None, _) => problems.push("ran, but has no `elapsed_ms`".to_owned()),
        (Some(mine), Some(theirs)) if mine != theirs => {
            problems.push(format!("`elapsed_ms` is {mine}, but its Subagent {agent_id} ran {theirs} ms"))
        }
        _ => {}
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
        if kind != text(subagent, "reason") || details.is_empty() {
            problems.push(format!(
                "its Subagent {agent_id} ended `{subagent_status}` ({}), but the step's error is {}",
                text(subagent, "reason"),
                error.unwrap_or(&Value::Null)
            ));
        }
    }
    let closed = subagent_status == "cancelled" && text(subagent, "reason") == CLOSED_BY_WORKFLOW;
    let expected = if subagent_status == "completed" { declared(text(subagent, "summary")) } else { "failed" };
    if checkpoint != expected {
        problems.push(format!(
            "its Subagent {agent_id} ended `{subagent_status}`, so its checkpoint is `{expected}`, not `{checkpoint}`"
        ));
    }
    let status = if closed || subagent_status == "timed_out" { "timed_out" } else { subagent_status };
    if text(step, "status") != status {
        problems.push(format!("its status is `{}`, but its Subagent's end makes it `{status}`", text(step, "status")));
    }
    problems
}

/// The checkpoint a completed Subagent's summary declares: the first `checkpoint_status:`
/// followed by `partial`, `failed`, `needs_orchestrator` or `checkpoint_ready` (any case),
/// else `checkpoint_ready`.
fn declared(summary: &str) -> &'static str {
    let lower = summary.to_lowercase();
    for (at, _) in lower.match_indices("checkpoint_status:") {
        let word: String = lower[at + "checkpoint_status:".len()..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        for known in ["checkpoint_ready", "partial", "failed", "needs_orchestrator"] {
            if word == known {
                return known;
            }
        }
    }
    "checkpoint_ready"
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::invariants::fixture::{capture, check};

    fn run(step: Value) -> Vec<String> {
        let capture = capture(
            &[
                (
                    "subagent_event",
                    json!({"subagent_id": "sub_1", "status": "failed", "reason": "provider_error", "child_session_id": "wf_1-a", "summary": "boom", "elapsed_ms": 7}),
                ),
                (
                    "tool_result",
                    json!({"call_id": "c", "ok": true, "workflow": {"workflow_id": "wf_1", "steps": [step]}}),
                ),
            ],
            &[],
        );
        check(INVARIANT, &capture)
    }

    #[test]
    fn a_failed_step_without_its_error_or_elapsed_time_is_caught() {
        let honest = json!({"step_id": "a", "agent_id": "sub_1", "child_session_id": "wf_1-a", "wave": 1,
            "status": "failed", "subagent_status": "failed", "checkpoint_status": "failed", "summary": "boom",
            "elapsed_ms": 7, "error": {"kind": "provider_error", "details": "boom"},
            "safe_next_actions": ["inspect_step_failure", "retry_failed_step"]});
        assert_eq!(run(honest.clone()), Vec::<String>::new());
        let mut dishonest = honest;
        dishonest["checkpoint_status"] = json!("checkpoint_ready");
        dishonest["safe_next_actions"] = json!([]);
        dishonest.as_object_mut().unwrap().remove("error");
        dishonest.as_object_mut().unwrap().remove("elapsed_ms");
        assert_eq!(
            run(dishonest),
            [
                "workflow wf_1 (seq 1) step `a`: ran, but has no `elapsed_ms`",
                "workflow wf_1 (seq 1) step `a`: its Subagent sub_1 ended `failed` (provider_error), but the step's error is null",
                "workflow wf_1 (seq 1) step `a`: its Subagent sub_1 ended `failed`, so its checkpoint is `failed`, not `checkpoint_ready`",
            ]
        );
    }

    #[test]
    fn a_summary_declares_its_checkpoint() {
        assert_eq!(declared("Half. Checkpoint_Status: PARTIAL"), "partial");
        assert_eq!(declared("checkpoint_status: held; checkpoint_status: needs_orchestrator"), "needs_orchestrator");
        assert_eq!(declared("all good"), "checkpoint_ready");
    }
}
