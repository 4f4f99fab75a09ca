//! WF-OUTCOME-DETAILS (MAY): a `run_workflow` result fills in what seed 001 asks for as
//! pixir.md 8 does. The seed asks for safe next actions "such as retry, rerun failed steps
//! only, ask user, or abort", error kind and details, a derived checkpoint status, and a result
//! presenters read apart; pixir.md 8 names each: a step's safe next actions by its checkpoint,
//! the workflow's by its lists, waves numbered from 1, a failed step's error kind as its
//! Subagent's terminal reason, a completed step's checkpoint as its summary declares it (else
//! `checkpoint_ready`) and any other end `failed`, the summary's counts, and the output line
//! `Workflow <id> <status>: ...` with the held count. Another implementation may name them
//! otherwise and still keep the seed (WF-STEP-OUTCOME, WF-RESULT judge that part).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{WorkflowRun, strings, text, workflow_runs};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-OUTCOME-DETAILS",
    also: &[],
    name: "workflow_outcome_details",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        for step in run.steps() {
            let prefix = format!("{} step `{}`", run.name(), text(step, "step_id"));
            problems.extend(judge_step(&run, step).into_iter().map(|problem| format!("{prefix}: {problem}")));
        }
        let prefix = run.name();
        problems.extend(judge_result(&run).into_iter().map(|problem| format!("{prefix}: {problem}")));
    }
    problems
}

/// pixir.md 8's step-level safe next actions for a step so decided.
fn step_actions(checkpoint: &str, status: &str, held_reason: &str) -> &'static [&'static str] {
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
    let expected = step_actions(checkpoint, text(step, "status"), text(step, "held_reason"));
    let actions = strings(step, "safe_next_actions");
    if actions != expected {
        problems.push(format!("its safe next actions are {actions:?}, but a `{checkpoint}` step's are {expected:?}"));
    }
    let Some(subagent) = run.subagent_of(step) else { return problems };
    if step.get("wave").and_then(Value::as_u64) == Some(0) {
        problems.push("is in wave 0; waves are numbered from 1".to_owned());
    }
    let status = text(subagent, "status");
    let reason = text(subagent, "reason");
    let kind = step.pointer("/error/kind").and_then(Value::as_str);
    if status != "completed" && kind.is_some_and(|kind| kind != reason) {
        problems.push(format!("its error kind is {kind:?}, but its Subagent's terminal reason is `{reason}`"));
    }
    let expected = if status == "completed" { declared(text(subagent, "summary")) } else { "failed" };
    if checkpoint != expected {
        problems.push(format!("its Subagent ended `{status}`, so its checkpoint is `{expected}`, not `{checkpoint}`"));
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

fn judge_result(run: &WorkflowRun) -> Vec<String> {
    let mut problems = Vec::new();
    let workflow = run.workflow;
    let lists = run.lists();
    let n = |key: &str| lists.iter().find(|(name, _)| *name == key).map_or(0, |(_, ids)| ids.len());
    let status = run.derived_status();
    let mut expected = BTreeSet::new();
    if n("failed_steps") > n("timeout_steps") {
        expected.insert("retry_failed_steps");
    }
    if n("timeout_steps") > 0 || status == "timed_out" {
        expected.insert("inspect_timed_out_steps_or_retry_with_larger_timeout");
    }
    if status != "completed" && n("checkpoint_ready_steps") + n("partial_steps") > 0 {
        expected.insert("synthesize_from_usable_checkpoints_or_retry");
    }
    if n("held_steps") > 0 {
        expected.insert("rerun_after_dependencies_checkpoint_ready");
    }
    if n("needs_orchestrator_steps") > 0 {
        expected.insert("ask_user_or_orchestrator");
    }
    let reported: BTreeSet<&str> = strings(workflow, "safe_next_actions").into_iter().collect();
    if reported != expected {
        problems.push(format!("its safe next actions are {reported:?}, but its steps call for {expected:?}"));
    }
    let n_waves = workflow.get("waves").and_then(Value::as_array).map(Vec::len);
    let counts = lists.iter().map(|(key, ids)| (*key, Some(ids.len())));
    for (key, expected) in counts.chain([("steps", Some(run.steps().len())), ("waves", n_waves)]) {
        let count = workflow.pointer(&format!("/summary/{key}")).and_then(Value::as_u64);
        if count.and_then(|count| usize::try_from(count).ok()) != expected {
            problems.push(format!("summary counts {count:?} {key}, but it has {expected:?}"));
        }
    }
    let words = match status {
        "timed_out" => "timed out",
        "needs_orchestrator" => "held for an orchestrator",
        other => other,
    };
    let head = format!("Workflow {} {words}:", run.id);
    let held = format!(" {} held", n("held_steps"));
    if !run.output.starts_with(&head) || (status != "completed" && !run.output.contains(&held)) {
        problems.push(format!("its output line {:?} does not say `{head}` with{held}", run.output));
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{check, failed_workflow};

    #[test]
    fn the_reference_details_hold_on_an_honest_result() {
        assert_eq!(check(INVARIANT, &failed_workflow(|_| {})), Vec::<String>::new());
    }

    #[test]
    fn another_naming_of_what_the_seed_asks_is_a_should_finding() {
        let capture = failed_workflow(|result| {
            result["output"] = json!("wf_1 FAILED (b held)");
            result["workflow"]["safe_next_actions"] = json!(["retry"]);
            result["workflow"]["summary"]["held_steps"] = json!(0);
            let step = &mut result["workflow"]["steps"][0];
            step["wave"] = json!(0);
            step["error"]["kind"] = json!("timeout");
            step["safe_next_actions"] = json!(["retry"]);
        });
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow wf_1 (seq 3) step `a`: its safe next actions are [\"retry\"], but a `failed` step's are [\"inspect_step_failure\", \"retry_failed_step\"]",
                "workflow wf_1 (seq 3) step `a`: is in wave 0; waves are numbered from 1",
                "workflow wf_1 (seq 3) step `a`: its error kind is Some(\"timeout\"), but its Subagent's terminal reason is `provider_error`",
                "workflow wf_1 (seq 3): its safe next actions are {\"retry\"}, but its steps call for {\"rerun_after_dependencies_checkpoint_ready\", \"retry_failed_steps\"}",
                "workflow wf_1 (seq 3): summary counts Some(0) held_steps, but it has Some(1)",
                "workflow wf_1 (seq 3): its output line \"wf_1 FAILED (b held)\" does not say `Workflow wf_1 failed:` with 1 held",
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
