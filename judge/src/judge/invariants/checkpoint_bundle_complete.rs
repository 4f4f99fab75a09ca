//! WF-CHECKPOINT-BUNDLE: every Checkpoint Bundle is the structured evidence seed 001 (ADR 0014)
//! lists: it names its step, source Subagent id and child Session id as its Step Outcome does,
//! `dependent_safe` (in it and in its typed payloads) is true exactly when the step is
//! `checkpoint_ready`, `known_limitations` is empty only then, and the result's
//! `usable_checkpoints` are the bundles of exactly the ready steps.
//!
//! The rest is pixir.md 8's version 2 (WF-REF-DETAILS, a MAY): `version` 2, its `status` the
//! step's `checkpoint_status`, the words of its limitations (`checkpoint_not_ready` for a step
//! that ran, the held reason for a held one, `timed_out` for a step out of time and only then),
//! `verification` naming its source and the step's Subagent status, and its summary the step's;
//! each `checkpoint_decided` of the spine giving `dependent_safe` by the same rule is WF-SPINE's.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{text, workflow_runs};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-CHECKPOINT-BUNDLE",
    also: &["WF-CHECKPOINT", REFERENCE, SPINE],
    name: "checkpoint_bundle_complete",
    applies: Scope::Log,
    check,
};

/// What a bundle that keeps the seed's evidence in other words than the reference's breaks.
const REFERENCE: &str = "WF-REF-DETAILS";

/// What a `checkpoint_decided` that disagrees with its step breaks.
const SPINE: &str = "WF-SPINE";

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    for run in workflow_runs(evidence) {
        let prefix = run.name();
        let mut ready = BTreeSet::new();
        for step in run.steps() {
            let step_id = text(step, "step_id");
            if text(step, "checkpoint_status") == "checkpoint_ready" {
                ready.insert(step_id);
            }
            let bundle = step.get("checkpoint").unwrap_or(&Value::Null);
            let context = format!("{prefix} step `{step_id}`: ");
            problems.extend(judge_bundle(bundle, step).into_iter().map(|problem| problem.in_context(&context)));
        }
        let usable = run.workflow.get("usable_checkpoints").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let listed: BTreeSet<&str> = usable.iter().map(|bundle| text(bundle, "step_id")).collect();
        if listed != ready || usable.len() != ready.len() {
            problems.push(Violation::new(format!(
                "{prefix}: `usable_checkpoints` are the bundles of {listed:?}, but the checkpoint-ready steps are {ready:?}"
            )));
        }
        for bundle in usable {
            let own = run.steps().iter().find(|step| text(step, "step_id") == text(bundle, "step_id"));
            if own.and_then(|step| step.get("checkpoint")) != Some(bundle) {
                problems.push(Violation::new(format!(
                    "{prefix}: the usable checkpoint of `{}` is not its step's bundle",
                    text(bundle, "step_id")
                )));
            }
        }
    }
    let decided = evidence.lines.iter().filter_map(|line| Some((line.seq, line.workflow_event()?)));
    for (seq, event) in decided.filter(|(_, event)| event.kind == Some("checkpoint_decided")) {
        let ready = event.checkpoint_status == Some("checkpoint_ready");
        if event.dependent_safe.and_then(Value::as_bool) != Some(ready) {
            let message = format!(
                "checkpoint_decided at seq {} for `{}` is `{}` with dependent_safe {}",
                seq.unwrap_or_default(),
                event.step_id.unwrap_or("?"),
                event.checkpoint_status.unwrap_or("?"),
                event.dependent_safe.unwrap_or(&Value::Null)
            );
            problems.push(Violation::new(message).of(SPINE));
        }
    }
    problems
}

/// What is wrong with one step's bundle.
fn judge_bundle(bundle: &Value, step: &Value) -> Vec<Violation> {
    if !bundle.is_object() {
        return vec![Violation::new("has no Checkpoint Bundle".to_owned())];
    }
    let mut seed = Vec::new();
    let mut reference = Vec::new();
    let status = text(step, "checkpoint_status");
    let ready = status == "checkpoint_ready";
    if bundle.get("version").and_then(Value::as_u64) != Some(2) {
        reference.push(format!("its bundle is version {}, not 2", bundle.get("version").unwrap_or(&Value::Null)));
    }
    for (key, own) in [("step_id", "step_id"), ("agent_id", "agent_id"), ("child_session_id", "child_session_id")] {
        if bundle.get(key).unwrap_or(&Value::Null) != step.get(own).unwrap_or(&Value::Null) {
            seed.push(format!("its bundle's `{key}` is not the step's"));
        }
    }
    if text(bundle, "status") != status {
        reference.push(format!("its bundle is `{}`, but the step's checkpoint is `{status}`", text(bundle, "status")));
    }
    if bundle.get("dependent_safe").and_then(Value::as_bool) != Some(ready) {
        seed.push(format!(
            "its bundle is `{status}` with dependent_safe {}",
            bundle.get("dependent_safe").unwrap_or(&Value::Null)
        ));
    }
    match bundle.get("known_limitations").and_then(Value::as_array) {
        None => seed.push("its bundle has no `known_limitations`".to_owned()),
        Some(limitations) if limitations.is_empty() != ready => {
            seed.push(format!("its bundle is `{status}` with known_limitations {limitations:?}"));
        }
        Some(limitations) => reference.extend(limitation_words(limitations, step)),
    }
    let verification = bundle.get("verification").unwrap_or(&Value::Null);
    if text(verification, "source").is_empty()
        || verification.get("subagent_status").unwrap_or(&Value::Null)
            != step.get("subagent_status").unwrap_or(&Value::Null)
    {
        reference.push(format!(
            "its bundle's verification {verification} does not name its source and the step's Subagent status"
        ));
    }
    let summary = text(step, "summary");
    let kept = text(bundle, "summary");
    if !summary.starts_with(kept) || (kept.is_empty() && !summary.is_empty()) {
        reference.push(format!("its bundle's summary {kept:?} is not the step's summary {summary:?}"));
    }
    for payload in bundle.get("typed_payloads").and_then(Value::as_array).into_iter().flatten() {
        let payload = payload.get("payload").unwrap_or(&Value::Null);
        if text(payload, "checkpoint_status") != status
            || payload.get("dependent_safe").and_then(Value::as_bool) != Some(ready)
        {
            seed.push(format!("its bundle's typed payload {payload} disagrees with the step's `{status}`"));
        }
    }
    let seed = seed.into_iter().map(Violation::new);
    seed.chain(reference.into_iter().map(|message| Violation::new(message).of(REFERENCE))).collect()
}

/// The reference's words for why a bundle that is not ready is not: `checkpoint_not_ready` for
/// a step that ran, the held reason for a held one, `timed_out` for a step out of time and
/// only then.
fn limitation_words(limitations: &[Value], step: &Value) -> Vec<String> {
    let status = text(step, "checkpoint_status");
    let ready = status == "checkpoint_ready";
    let ran = step.get("agent_id").is_some_and(|id| !id.is_null());
    let timed_out = text(step, "status") == "timed_out";
    let why = [
        (ran && !ready).then_some("checkpoint_not_ready"),
        (!ran).then(|| text(step, "held_reason")),
        timed_out.then_some("timed_out"),
    ];
    let mut problems = Vec::new();
    if !timed_out && limitations.iter().any(|known| known == "timed_out") {
        problems.push(format!("its bundle is `{status}`, but its known_limitations {limitations:?} say `timed_out` of a step that did not run out of time"));
    }
    for limitation in why.into_iter().flatten() {
        if !limitations.iter().any(|known| known == limitation) {
            problems.push(format!(
                "its bundle is `{status}`, but its known_limitations {limitations:?} do not name `{limitation}`"
            ));
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
    fn a_partial_bundle_marked_dependent_safe_is_caught() {
        let bundle = json!({"version": 2, "step_id": "a", "agent_id": "sub_1", "child_session_id": "c", "status": "partial",
            "dependent_safe": true, "known_limitations": ["checkpoint_not_ready"], "summary": "half",
            "verification": {"source": "subagent_terminal_summary", "subagent_status": "completed"}});
        let step = json!({"step_id": "a", "agent_id": "sub_1", "child_session_id": "c", "checkpoint_status": "partial",
            "subagent_status": "completed", "summary": "half", "checkpoint": bundle});
        let capture = capture(
            &[
                (
                    "workflow_event",
                    json!({"kind": "checkpoint_decided", "workflow_id": "wf_1", "step_id": "a", "checkpoint_status": "partial", "dependent_safe": true}),
                ),
                (
                    "tool_result",
                    json!({"call_id": "c", "workflow": {"workflow_id": "wf_1", "steps": [step], "usable_checkpoints": [bundle]}}),
                ),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow wf_1 (seq 1) step `a`: its bundle is `partial` with dependent_safe true",
                "workflow wf_1 (seq 1): `usable_checkpoints` are the bundles of {\"a\"}, but the checkpoint-ready steps are {}",
                "checkpoint_decided at seq 0 for `a` is `partial` with dependent_safe true",
            ]
        );
    }

    /// A bundle that keeps the seed's evidence in its own version, words and verification
    /// differs from the reference only (issue 31).
    #[test]
    fn a_bundle_in_other_words_is_the_references_difference() {
        use crate::judge::fixture::check_as;
        let bundle = json!({"version": 1, "step_id": "a", "agent_id": "sub_1", "child_session_id": "c",
            "dependent_safe": false, "known_limitations": ["tests not run"], "summary": "half"});
        let step = json!({"step_id": "a", "agent_id": "sub_1", "child_session_id": "c", "checkpoint_status": "partial",
            "subagent_status": "completed", "summary": "half", "checkpoint": bundle});
        let capture = capture(
            &[(
                "tool_result",
                json!({"call_id": "c", "workflow": {"workflow_id": "wf_1", "steps": [step], "usable_checkpoints": []}}),
            )],
            &[],
        );
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &capture), Vec::<String>::new());
        assert_eq!(check_as(INVARIANT, REFERENCE, &capture).len(), 4);
    }
}
