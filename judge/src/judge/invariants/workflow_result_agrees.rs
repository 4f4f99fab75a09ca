//! WF-RESULT: a `run_workflow` result agrees with its own Step Outcomes (seed 001, ADR 0014
//! "Partial Workflow Outcome"; seed 000, ADR 0026 "Workflow terminal states"). It lists every
//! step of the graph once; its failed, timed-out, held, partial and needs-orchestrator lists
//! are what the steps say; its `status` is derived from them as the auditor derives it from
//! the spine (`completed` when every step is ready, else `timed_out`, `needs_orchestrator`,
//! `partial` when a checkpoint is ready or partial, else `failed`), `ok` only for `completed`,
//! the same in `workflow_finished` and in the auditor's reading; an incomplete one gives safe
//! next actions, and its proof trail claims no more than its status; its output line names
//! the status (WF-ACP-PARTIAL); and its `unresolved_seam_obligations` are exactly the
//! dependency edges whose dependency is not `checkpoint_ready` (WF-SEAM-OBLIGATIONS). What
//! pixir.md 8 alone fixes (the actions' names, the summary's counts, the output line's words)
//! is WF-OUTCOME-DETAILS'; the lists' names, and which of several statuses that hold comes
//! first, WF-REF-DETAILS'; `workflow_finished` and the auditor's reading of the spine,
//! WF-SPINE's (all MAYs).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::audit::WorkflowTerminal;
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{WorkflowRun, strings, text, workflow_runs};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-RESULT",
    also: &[SEAMS, "WF-ACP-PARTIAL", REFERENCE, SPINE],
    name: "workflow_result_agrees",
    applies: Scope::Log,
    check,
};

const SEAMS: &str = "WF-SEAM-OBLIGATIONS";
const REFERENCE: &str = "WF-REF-DETAILS";
const SPINE: &str = "WF-SPINE";

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        let context = format!("{}: ", run.name());
        let audited = evidence
            .audit
            .workflows
            .iter()
            .rev()
            .find(|workflow| workflow.workflow_id == run.id)
            .and_then(|workflow| workflow.terminal_state);
        problems.extend(judge_run(&run, audited).into_iter().map(|problem| problem.in_context(&context)));
    }
    problems
}

fn judge_run(run: &WorkflowRun, audited: Option<WorkflowTerminal>) -> Vec<Violation> {
    let mut problems = Vec::new();
    let steps = run.steps();
    let workflow = run.workflow;
    let graph: BTreeSet<&str> = run.graph.iter().map(|node| text(node, "id")).collect();
    let listed: Vec<&str> = steps.iter().map(|step| text(step, "step_id")).collect();
    if listed.iter().copied().collect::<BTreeSet<_>>() != graph || listed.len() != graph.len() {
        let message = format!("its Step Outcomes are {listed:?}, but the graph's steps are {graph:?}");
        problems.push(Violation::new(message));
    }
    for (key, expected) in run.lists().iter().filter(|(key, _)| *key != "checkpoint_ready_steps") {
        let reported: Option<Vec<&str>> =
            workflow.get(*key).and_then(Value::as_array).map(|ids| ids.iter().filter_map(Value::as_str).collect());
        if reported.as_ref() != Some(expected) {
            // A list under another name is the reference's name missed, not a wrong list.
            let violation =
                Violation::new(format!("`{key}` is {reported:?}, but its Step Outcomes make it {expected:?}"));
            problems.push(if reported.is_none() { violation.of(REFERENCE) } else { violation });
        }
    }
    let status = run.derived_status();
    let reported = text(workflow, "status");
    if reported != status {
        let violation = Violation::new(format!("its status is `{reported}`, but its Step Outcomes make it `{status}`"));
        // Another status that also holds is gauntlet's precedence missed, not an untrue one.
        let holds = run.statuses_that_hold().contains(&reported);
        problems.push(if holds { violation.of(REFERENCE) } else { violation });
    }
    if workflow.get("ok").and_then(Value::as_bool) != Some(status == "completed") {
        problems
            .push(Violation::new(format!("it is `{status}` with ok {}", workflow.get("ok").unwrap_or(&Value::Null))));
    }
    let spine = match run.finished {
        None => Some("no workflow_finished precedes it".to_owned()),
        Some(finished)
            if finished.get("status") != workflow.get("status") || finished.get("ok") != workflow.get("ok") =>
        {
            Some(format!(
                "workflow_finished records `{}` (ok {}), the result `{reported}`",
                text(finished, "status"),
                finished.get("ok").unwrap_or(&Value::Null)
            ))
        }
        _ => None,
    };
    let audited = audited.map(|audited| serde_json::to_value(audited).unwrap_or_default());
    let misread = audited
        .filter(|audited| audited.as_str() != Some(reported))
        .map(|audited| format!("its status is `{reported}`, but the auditor reads its spine as {audited}"));
    problems.extend(spine.into_iter().chain(misread).map(|message| Violation::new(message).of(SPINE)));
    // A result is held to its own status when that one holds too.
    let told = if run.statuses_that_hold().contains(&reported) { reported } else { status };
    problems.extend(judge_actions(workflow, told).into_iter().map(Violation::new));
    problems.extend(judge_output(run, told).into_iter().map(|message| Violation::new(message).of("WF-ACP-PARTIAL")));
    problems.extend(judge_seams(run).into_iter().map(|message| Violation::new(message).of(SEAMS)));
    problems
}

/// An incomplete workflow gives safe next actions (seed 000, ADR 0026: a partial result has
/// "safe next actions"; seed 001 lists them); its proof trail claims `completion_ready` only
/// when complete, `partial_outcome_ready` when partial (seed 000: Workflows "separate
/// `completion_ready` from `partial_outcome_ready`"). Their names are WF-OUTCOME-DETAILS'.
fn judge_actions(workflow: &Value, status: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if status != "completed" && strings(workflow, "safe_next_actions").is_empty() {
        problems.push(format!("it is `{status}`, but it gives no safe next action"));
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

/// The output line names the workflow's status in some words (seed 001: "ACP presentation
/// distinguishes completed, partial, held, and failed outcomes"); the reference's exact line is
/// WF-OUTCOME-DETAILS'.
fn judge_output(run: &WorkflowRun, status: &str) -> Vec<String> {
    let words: &[&str] = match status {
        "completed" => &["complete"],
        "timed_out" => &["timed out", "timed_out", "timeout"],
        "needs_orchestrator" => &["orchestrator"],
        "partial" => &["partial"],
        _ => &["fail"],
    };
    let output = without_counts(&run.output.to_lowercase());
    if !words.iter().any(|word| output.contains(word)) {
        return vec![format!("it is `{status}`, but its output line {:?} does not say so", run.output)];
    }
    Vec::new()
}

/// An output line without its counts ("1 failed", "0 partial", "1 timed out", "0 needing
/// orchestrator"): a count of steps names no outcome of the workflow's own, so a line that only
/// counts does not say how the workflow ended.
fn without_counts(output: &str) -> String {
    let mut words = output.split_whitespace();
    let mut kept = Vec::new();
    while let Some(word) = words.next() {
        if !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
            // The thing counted: one word, or two ("timed out", "needing orchestrator").
            if matches!(words.next(), Some("timed" | "needing")) {
                words.next();
            }
            continue;
        }
        kept.push(word);
    }
    kept.join(" ")
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
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::{check, failed_workflow};

    fn result(edit: impl FnOnce(&mut Value)) -> Vec<String> {
        check(INVARIANT, &failed_workflow(edit))
    }

    #[test]
    fn a_workflow_whose_every_step_failed_reads_failed() {
        assert_eq!(result(|_| {}), Vec::<String>::new());
        assert_eq!(
            result(|result| result["workflow"]["status"] = json!("partial")),
            [
                "workflow wf_1 (seq 3): its status is `partial`, but its Step Outcomes make it `failed`",
                "workflow wf_1 (seq 3): its status is `partial`, but the auditor reads its spine as \"failed\"",
            ]
        );
    }

    /// A status that also holds is gauntlet's precedence missed; an untrue one, or a list the
    /// reference names and the result does not, is judged by its tier (issue 31).
    #[test]
    fn a_status_that_also_holds_and_an_unnamed_list_are_the_references_difference() {
        use crate::judge::fixture::check_as;
        let needs_decision = failed_workflow(|result| {
            result["workflow"]["steps"][1]["checkpoint_status"] = json!("needs_orchestrator");
            result["workflow"]["held_steps"] = json!([]);
            result["workflow"]["needs_orchestrator_steps"] = json!(["b"]);
            result["workflow"]["unresolved_seam_obligations"] = json!(null);
            result["workflow"].as_object_mut().unwrap().remove("partial_steps");
        });
        let found = check_as(INVARIANT, INVARIANT.id, &needs_decision);
        assert_eq!(found, Vec::<String>::new(), "`failed` holds beside `needs_orchestrator`");
        assert_eq!(
            check_as(INVARIANT, REFERENCE, &needs_decision),
            [
                "workflow wf_1 (seq 3): `partial_steps` is None, but its Step Outcomes make it []",
                "workflow wf_1 (seq 3): its status is `failed`, but its Step Outcomes make it `needs_orchestrator`",
            ]
        );
        let completed = failed_workflow(|result| result["workflow"]["status"] = json!("completed"));
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &completed),
            ["workflow wf_1 (seq 3): its status is `completed`, but its Step Outcomes make it `failed`"]
        );
    }

    #[test]
    fn an_incomplete_workflow_names_its_status_and_what_to_do_next() {
        assert_eq!(
            result(|result| {
                result["output"] = json!("Workflow wf_1 done.");
                result["workflow"]["safe_next_actions"] = json!([]);
            }),
            [
                "workflow wf_1 (seq 3): it is `failed`, but it gives no safe next action",
                "workflow wf_1 (seq 3): it is `failed`, but its output line \"Workflow wf_1 done.\" does not say so",
            ]
        );
        let other_words = result(|result| {
            result["output"] = json!("wf_1 FAILED (b held)");
            result["workflow"]["safe_next_actions"] = json!(["retry"]);
        });
        assert_eq!(other_words, Vec::<String>::new(), "the names and the line's words are WF-OUTCOME-DETAILS'");
        // A line that only counts steps ("1 failed") does not say the workflow failed.
        let counts_only = result(|result| {
            result["output"] = json!("Workflow wf_1 : 1 checkpoint-ready, 1 failed, 1 timed out, 0 partial.");
            result["workflow"]["safe_next_actions"] = json!(["retry"]);
        });
        assert_eq!(
            counts_only,
            [
                "workflow wf_1 (seq 3): it is `failed`, but its output line \"Workflow wf_1 : 1 checkpoint-ready, 1 failed, 1 timed out, 0 partial.\" does not say so"
            ]
        );
    }
}
