//! WF-RESULT: a `run_workflow` result agrees with its own Step Outcomes (seed 001, ADR 0014
//! "Partial Workflow Outcome"; seed 000, ADR 0026 "Workflow terminal states"; pixir.md 8
//! "Result"). It lists every step of the graph once; its failed, timed-out, held, partial
//! and needs-orchestrator lists and its summary counts are what the steps say; its `status`
//! is derived from them as the auditor derives it from the spine (`completed` when every step
//! is ready, else `timed_out`, `needs_orchestrator`, `partial` when a checkpoint is ready or
//! partial, else `failed`), `ok` only for `completed`, the same in `workflow_finished` and in
//! the auditor's reading; its safe next actions and proof trail follow; its output line names
//! the status and the held count (WF-ACP-PARTIAL); and its `unresolved_seam_obligations` are
//! exactly the dependency edges whose dependency is not `checkpoint_ready`
//! (WF-SEAM-OBLIGATIONS).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Invariant, Scope, WorkflowRun, strings, text, workflow_runs};
use crate::audit::WorkflowTerminal;
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "WF-RESULT",
    also: &["WF-SEAM-OBLIGATIONS", "WF-ACP-PARTIAL", "WF-OK-ONLY-COMPLETE"],
    name: "workflow_result_agrees",
    scope: Scope::Log,
    check,
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        let prefix = run.name();
        let audited = evidence
            .audit
            .workflows
            .iter()
            .rev()
            .find(|workflow| workflow.workflow_id == run.id)
            .and_then(|workflow| workflow.terminal_state);
        problems.extend(judge_run(&run, audited).into_iter().map(|problem| format!("{prefix}: {problem}")));
    }
    problems
}

/// The status ADR 0026 gives a workflow whose steps ended so.
fn derived(steps: &[Value]) -> &'static str {
    let any = |pick: &dyn Fn(&Value) -> bool| steps.iter().any(pick);
    let checkpoint = |status: &'static str| move |step: &Value| text(step, "checkpoint_status") == status;
    if !steps.is_empty() && steps.iter().all(checkpoint("checkpoint_ready")) {
        "completed"
    } else if any(&|step| text(step, "status") == "timed_out" || text(step, "held_reason") == "workflow_timeout") {
        "timed_out"
    } else if any(&checkpoint("needs_orchestrator")) {
        "needs_orchestrator"
    } else if any(&checkpoint("checkpoint_ready")) || any(&checkpoint("partial")) {
        "partial"
    } else {
        "failed"
    }
}

fn judge_run(run: &WorkflowRun, audited: Option<WorkflowTerminal>) -> Vec<String> {
    let mut problems = Vec::new();
    let steps = run.steps();
    let workflow = run.workflow;
    let ids = |pick: &dyn Fn(&Value) -> bool| -> Vec<&str> {
        steps.iter().filter(|step| pick(step)).map(|step| text(step, "step_id")).collect()
    };
    let graph: BTreeSet<&str> = run.graph.iter().map(|node| text(node, "id")).collect();
    let listed: Vec<&str> = ids(&|_| true);
    if listed.iter().copied().collect::<BTreeSet<_>>() != graph || listed.len() != graph.len() {
        problems.push(format!("its Step Outcomes are {listed:?}, but the graph's steps are {graph:?}"));
    }
    let lists = [
        ("held_steps", ids(&|step| text(step, "checkpoint_status") == "held")),
        ("failed_steps", ids(&|step| text(step, "checkpoint_status") == "failed")),
        ("partial_steps", ids(&|step| text(step, "checkpoint_status") == "partial")),
        ("needs_orchestrator_steps", ids(&|step| text(step, "checkpoint_status") == "needs_orchestrator")),
        ("timeout_steps", ids(&|step| text(step, "status") == "timed_out")),
        ("checkpoint_ready_steps", ids(&|step| text(step, "checkpoint_status") == "checkpoint_ready")),
    ];
    for (key, expected) in &lists {
        let reported: Option<Vec<&str>> =
            workflow.get(*key).and_then(Value::as_array).map(|ids| ids.iter().filter_map(Value::as_str).collect());
        if *key != "checkpoint_ready_steps" && reported.as_ref() != Some(expected) {
            problems.push(format!("`{key}` is {reported:?}, but its Step Outcomes make it {expected:?}"));
        }
        let count = workflow.pointer(&format!("/summary/{key}")).and_then(Value::as_u64);
        if count != u64::try_from(expected.len()).ok() {
            problems.push(format!("summary counts {count:?} {key}, but its Step Outcomes make it {}", expected.len()));
        }
    }
    let n_waves = workflow.get("waves").and_then(Value::as_array).map(Vec::len);
    for (key, expected) in [("steps", Some(steps.len())), ("waves", n_waves)] {
        let count = workflow.pointer(&format!("/summary/{key}")).and_then(Value::as_u64);
        if count.and_then(|count| usize::try_from(count).ok()) != expected {
            problems.push(format!("summary counts {count:?} {key}, but it has {expected:?}"));
        }
    }
    let status = derived(steps);
    let reported = text(workflow, "status");
    if reported != status {
        problems.push(format!("its status is `{reported}`, but its Step Outcomes make it `{status}`"));
    }
    if workflow.get("ok").and_then(Value::as_bool) != Some(status == "completed") {
        problems.push(format!("it is `{status}` with ok {}", workflow.get("ok").unwrap_or(&Value::Null)));
    }
    match run.finished {
        None => problems.push("no workflow_finished precedes it".to_owned()),
        Some(finished)
            if finished.get("status") != workflow.get("status") || finished.get("ok") != workflow.get("ok") =>
        {
            problems.push(format!(
                "workflow_finished records `{}` (ok {}), the result `{reported}`",
                text(finished, "status"),
                finished.get("ok").unwrap_or(&Value::Null)
            ))
        }
        _ => {}
    }
    if let Some(audited) = audited {
        let audited = serde_json::to_value(audited).unwrap_or_default();
        if audited.as_str() != Some(reported) {
            problems.push(format!("its status is `{reported}`, but the auditor reads its spine as {audited}"));
        }
    }
    problems.extend(judge_actions(workflow, &lists, status));
    problems.extend(judge_output(run, status, lists[0].1.len()));
    problems.extend(judge_seams(run));
    problems
}

/// The workflow's safe next actions and proof trail, from its lists (pixir.md 8).
fn judge_actions(workflow: &Value, lists: &[(&str, Vec<&str>); 6], status: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let n = |key: &str| lists.iter().find(|(name, _)| *name == key).map_or(0, |(_, ids)| ids.len());
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
    let proofs: Vec<&str> = strings(workflow, "proof_states");
    let last = match status {
        "completed" => Some("completion_ready"),
        "failed" => None,
        _ => Some("partial_outcome_ready"),
    };
    let claimed = proofs.iter().copied().find(|proof| proof.ends_with("_ready"));
    if claimed != last {
        problems.push(format!("it is `{status}`, but its proof trail claims {claimed:?}"));
    }
    problems
}

/// The output line names the status, and the held steps of an incomplete workflow.
fn judge_output(run: &WorkflowRun, status: &str, n_held: usize) -> Vec<String> {
    let words = match status {
        "timed_out" => "timed out",
        "needs_orchestrator" => "held for an orchestrator",
        other => other,
    };
    let head = format!("Workflow {} {words}:", run.id);
    let held = format!(" {n_held} held");
    if !run.output.starts_with(&head) || (status != "completed" && !run.output.contains(&held)) {
        return vec![format!("its output line {:?} does not say `{head}` with{held}", run.output)];
    }
    Vec::new()
}

/// The unresolved Seam Obligations: each dependency edge whose dependency is not ready.
fn judge_seams(run: &WorkflowRun) -> Vec<String> {
    let checkpoint = |id: &str| {
        run.steps()
            .iter()
            .find(|step| text(step, "step_id") == id)
            .map_or("held", |step| text(step, "checkpoint_status"))
    };
    let mut expected = BTreeSet::new();
    for node in run.graph {
        for dependency in
            node.get("depends_on").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
        {
            if checkpoint(dependency) != "checkpoint_ready" {
                expected.insert((text(node, "id"), dependency, checkpoint(dependency)));
            }
        }
    }
    let obligations = run.workflow.get("unresolved_seam_obligations").and_then(Value::as_array);
    let reported: BTreeSet<(&str, &str, &str)> = obligations
        .into_iter()
        .flatten()
        .map(|seam| (text(seam, "step_id"), text(seam, "depends_on"), text(seam, "dependency_checkpoint_status")))
        .collect();
    if obligations.is_none() || reported != expected || obligations.map_or(0, Vec::len) != expected.len() {
        return vec![format!(
            "its unresolved Seam Obligations are {reported:?}, but its unready dependency edges are {expected:?}"
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::invariants::fixture::{capture, check};

    fn result(status: &str, output: &str) -> Vec<String> {
        let steps = json!([
            {"step_id": "a", "status": "failed", "checkpoint_status": "failed"},
            {"step_id": "b", "status": "held", "checkpoint_status": "held", "held_reason": "dependency_not_checkpoint_ready"},
        ]);
        let summary = json!({"steps": 2, "waves": 1, "checkpoint_ready_steps": 0, "held_steps": 1, "failed_steps": 1,
            "timeout_steps": 0, "partial_steps": 0, "needs_orchestrator_steps": 0});
        let workflow = json!({"workflow_id": "wf_1", "status": status, "ok": false, "steps": steps, "waves": [["a"]],
            "held_steps": ["b"], "failed_steps": ["a"], "partial_steps": [], "needs_orchestrator_steps": [], "timeout_steps": [],
            "summary": summary, "safe_next_actions": ["retry_failed_steps", "rerun_after_dependencies_checkpoint_ready"],
            "proof_states": ["summaries_collected"],
            "unresolved_seam_obligations": [{"step_id": "b", "depends_on": "a", "dependency_checkpoint_status": "failed"}]});
        let capture = capture(
            &[
                (
                    "workflow_event",
                    json!({"kind": "workflow_started", "workflow_id": "wf_1", "graph": {"steps": [{"id": "a", "depends_on": []}, {"id": "b", "depends_on": ["a"]}]}}),
                ),
                (
                    "workflow_event",
                    json!({"kind": "workflow_finished", "workflow_id": "wf_1", "status": status, "ok": false}),
                ),
                ("tool_result", json!({"call_id": "c", "output": output, "workflow": workflow})),
            ],
            &[],
        );
        check(INVARIANT, &capture)
    }

    #[test]
    fn a_workflow_whose_every_step_failed_reads_failed() {
        let line = "Workflow wf_1 failed: 0 checkpoint-ready, 1 failed, 0 timed out, 1 held, 0 partial, 0 needing orchestrator.";
        assert_eq!(result("failed", line), Vec::<String>::new());
        assert_eq!(
            result("partial", &line.replace("failed:", "partial:")),
            [
                "workflow wf_1 (seq 2): its status is `partial`, but its Step Outcomes make it `failed`",
                "workflow wf_1 (seq 2): its status is `partial`, but the auditor reads its spine as \"failed\"",
                "workflow wf_1 (seq 2): its output line \"Workflow wf_1 partial: 0 checkpoint-ready, 1 failed, 0 timed out, 1 held, 0 partial, 0 needing orchestrator.\" does not say `Workflow wf_1 failed:` with 1 held",
            ]
        );
    }
}
