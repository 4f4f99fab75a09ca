//! The Workflow result: Step Outcomes, usable Checkpoint Bundles, the lists of steps that
//! failed, timed out, were held, are partial or need an orchestrator, the unresolved Seam
//! Obligations, and safe next actions. `ok: true` only for full completion: a partial workflow
//! is valid data, never success (ADR 0014 "Partial Workflow Outcome"; ADR 0026 "Workflow
//! terminal states"; WF-RESULT, WF-SEAM-OBLIGATIONS).
//!
//! A seam is where one step consumes another's result: a `depends_on` edge. Its obligation
//! (the dependency owes its dependent a `checkpoint_ready` result) is unresolved when the
//! dependency was decided anything else; the seed names Seam Obligations without more, and a
//! dependency edge is the one place the reference's workflows join two steps' work.

use serde_json::{Value, json};

use super::checkpoint::{self, BundleInput, CheckpointStatus, bundle};
use super::spec::Spec;
use crate::event::{Data, SubagentStatus};

/// How a whole workflow ended, in ADR 0026's names, derived from its Step Outcomes the way
/// the auditor derives it from the spine (WF-RESULT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowStatus {
    /// Every step is `checkpoint_ready`.
    Completed,
    /// A step or the workflow ran out of time.
    TimedOut,
    /// A step asks for a human or parent decision.
    NeedsOrchestrator,
    /// Some checkpoint is usable (ready or partial), not all.
    Partial,
    /// Nothing usable without a rerun.
    Failed,
}

impl WorkflowStatus {
    /// The contract string.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowStatus::Completed => "completed",
            WorkflowStatus::TimedOut => "timed_out",
            WorkflowStatus::NeedsOrchestrator => "needs_orchestrator",
            WorkflowStatus::Partial => "partial",
            WorkflowStatus::Failed => "failed",
        }
    }

    /// How the `output` line names it.
    fn words(self) -> &'static str {
        match self {
            WorkflowStatus::Completed => "completed",
            WorkflowStatus::TimedOut => "timed out",
            WorkflowStatus::NeedsOrchestrator => "held for an orchestrator",
            WorkflowStatus::Partial => "partial",
            WorkflowStatus::Failed => "failed",
        }
    }

    /// The status of a run whose steps ended `outcomes`.
    pub fn of(outcomes: &[StepOutcome], n_steps: usize, workflow_timed_out: bool) -> WorkflowStatus {
        let any = |status: CheckpointStatus| outcomes.iter().any(|outcome| outcome.checkpoint_status == status);
        let n_ready =
            outcomes.iter().filter(|outcome| outcome.checkpoint_status == CheckpointStatus::CheckpointReady).count();
        if n_ready == n_steps {
            WorkflowStatus::Completed
        } else if workflow_timed_out || outcomes.iter().any(|outcome| outcome.timed_out) {
            WorkflowStatus::TimedOut
        } else if any(CheckpointStatus::NeedsOrchestrator) {
            WorkflowStatus::NeedsOrchestrator
        } else if any(CheckpointStatus::CheckpointReady) || any(CheckpointStatus::Partial) {
            WorkflowStatus::Partial
        } else {
            WorkflowStatus::Failed
        }
    }
}

/// How one step ended, as the scheduler saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// The step.
    pub step_id: String,
    /// The wave it ran in (1-based); `None` when held.
    pub wave: Option<usize>,
    /// Its Subagent, if it ran.
    pub agent_id: Option<String>,
    /// Its child Session, if it ran.
    pub child_session_id: Option<String>,
    /// The Subagent's last status, if it ran.
    pub subagent_status: Option<SubagentStatus>,
    /// The decided checkpoint status.
    pub checkpoint_status: CheckpointStatus,
    /// The Subagent's summary.
    pub summary: String,
    /// Why it failed or was held.
    pub reason: Option<String>,
    /// The step or the workflow ran out of time.
    pub timed_out: bool,
    /// How long its Subagent ran.
    pub elapsed_ms: Option<u64>,
    /// The step's Subagent timeout.
    pub step_timeout_ms: u64,
}

impl StepOutcome {
    /// A step whose Subagent ran in wave `wave`, from `last`, the data of its last lifecycle
    /// event. Its checkpoint is derived from the Subagent's status and summary (WF-CHECKPOINT),
    /// except that a step the workflow's timeout closed is `failed` and timed out
    /// (WF-TIMEOUT).
    pub fn ran(
        spec: &Spec,
        step_id: &str,
        wave: usize,
        subagent_id: &str,
        last: &Data,
        closed_by_workflow: bool,
    ) -> StepOutcome {
        let field = |key: &str| last.get(key).and_then(Value::as_str).map(str::to_owned);
        let subagent_status = field("status").and_then(|status| SubagentStatus::parse(&status));
        let summary = field("summary").unwrap_or_default();
        let checkpoint_status = match subagent_status {
            Some(status) if !closed_by_workflow => checkpoint::derive(status, &summary),
            _ => CheckpointStatus::Failed,
        };
        let reason = if closed_by_workflow { Some("closed_by_workflow_timeout".to_owned()) } else { field("reason") };
        StepOutcome {
            step_id: step_id.to_owned(),
            wave: Some(wave),
            agent_id: Some(subagent_id.to_owned()),
            child_session_id: field("child_session_id"),
            subagent_status,
            checkpoint_status,
            summary,
            reason,
            timed_out: closed_by_workflow || subagent_status == Some(SubagentStatus::TimedOut),
            elapsed_ms: last.get("elapsed_ms").and_then(Value::as_u64),
            step_timeout_ms: spec.step(step_id).map_or(0, |step| step.timeout_ms),
        }
    }

    /// A step that never ran, held for `reason` (WF-HELD); `timed_out` when the workflow's
    /// timeout held it.
    pub fn held(spec: &Spec, step_id: &str, reason: &str, timed_out: bool) -> StepOutcome {
        StepOutcome {
            step_id: step_id.to_owned(),
            wave: None,
            agent_id: None,
            child_session_id: None,
            subagent_status: None,
            checkpoint_status: CheckpointStatus::Held,
            summary: String::new(),
            reason: Some(reason.to_owned()),
            timed_out,
            elapsed_ms: None,
            step_timeout_ms: spec.step(step_id).map_or(0, |step| step.timeout_ms),
        }
    }

    /// The step's status: its Subagent's, `timed_out` when the workflow's timeout closed it,
    /// `held` when it never ran.
    pub fn status(&self) -> &'static str {
        match self.subagent_status {
            None => "held",
            Some(_) if self.timed_out => "timed_out",
            Some(status) => status.as_str(),
        }
    }

    /// The error kind of a step whose Subagent ended without completing (seed 001 "Step
    /// Outcome": "error kind/details when terminal failure occurred"): its Subagent's terminal
    /// reason, or the workflow's close.
    pub fn error_kind(&self) -> Option<&str> {
        match self.subagent_status {
            None | Some(SubagentStatus::Completed) => None,
            Some(_) => Some(self.reason.as_deref().unwrap_or("subagent_not_completed")),
        }
    }

    /// Why this step's checkpoint is not ready, for its bundle.
    fn limitations(&self) -> Vec<&str> {
        match self.checkpoint_status {
            CheckpointStatus::CheckpointReady => vec![],
            CheckpointStatus::Held if self.timed_out => vec!["workflow_timeout"],
            CheckpointStatus::Held => vec!["dependency_not_checkpoint_ready"],
            _ if self.timed_out => vec!["checkpoint_not_ready", "timed_out"],
            _ => vec!["checkpoint_not_ready"],
        }
    }

    /// The Checkpoint Bundle of this step.
    pub fn bundle(&self) -> Value {
        bundle(&BundleInput {
            step_id: &self.step_id,
            agent_id: self.agent_id.as_deref(),
            child_session_id: self.child_session_id.as_deref(),
            status: self.checkpoint_status,
            subagent_status: self.subagent_status,
            summary: &self.summary,
            limitations: self.limitations(),
        })
    }
}

/// The result of a run: the `workflow` object of the `run_workflow` tool result.
pub fn result(spec: &Spec, outcomes: &[StepOutcome], waves: &[Vec<String>], workflow_timed_out: bool) -> Value {
    let lists = StepLists::of(outcomes);
    let status = WorkflowStatus::of(outcomes, spec.steps.len(), workflow_timed_out);
    let complete = status == WorkflowStatus::Completed;
    let safe_next_actions = lists.safe_next_actions(complete, workflow_timed_out);
    let steps: Vec<Value> = outcomes.iter().map(|outcome| step_json(spec, outcome)).collect();
    let usable: Vec<Value> = outcomes
        .iter()
        .filter(|outcome| outcome.checkpoint_status == CheckpointStatus::CheckpointReady)
        .map(StepOutcome::bundle)
        .collect();
    let StepLists { ready, held, failed, partial, needs_orchestrator, timed_out } = lists;
    json!({
        "ok": complete,
        "mode": "run",
        "workflow_id": spec.id,
        "name": spec.name,
        "status": status.as_str(),
        "timed_out": workflow_timed_out,
        "proof_states": proof_states(status),
        "waves": waves,
        "steps": steps,
        "usable_checkpoints": usable,
        "held_steps": held,
        "failed_steps": failed,
        "timeout_steps": timed_out,
        "partial_steps": partial,
        "needs_orchestrator_steps": needs_orchestrator,
        "unresolved_seam_obligations": seam_obligations(spec, outcomes),
        "safe_next_actions": safe_next_actions,
        "summary": {
            "steps": spec.steps.len(),
            "waves": waves.len(),
            "checkpoint_ready_steps": ready.len(),
            "held_steps": held.len(),
            "failed_steps": failed.len(),
            "timeout_steps": timed_out.len(),
            "partial_steps": partial.len(),
            "needs_orchestrator_steps": needs_orchestrator.len(),
        },
    })
}

/// The ids of the steps in each checkpoint status, and of those that timed out, in outcome
/// order.
struct StepLists<'a> {
    ready: Vec<&'a str>,
    held: Vec<&'a str>,
    failed: Vec<&'a str>,
    partial: Vec<&'a str>,
    needs_orchestrator: Vec<&'a str>,
    timed_out: Vec<&'a str>,
}

impl<'a> StepLists<'a> {
    fn of(outcomes: &'a [StepOutcome]) -> StepLists<'a> {
        let ids = |pick: &dyn Fn(&StepOutcome) -> bool| -> Vec<&'a str> {
            outcomes.iter().filter(|outcome| pick(outcome)).map(|outcome| outcome.step_id.as_str()).collect()
        };
        let with = |status: CheckpointStatus| ids(&|outcome: &StepOutcome| outcome.checkpoint_status == status);
        StepLists {
            ready: with(CheckpointStatus::CheckpointReady),
            held: with(CheckpointStatus::Held),
            failed: with(CheckpointStatus::Failed),
            partial: with(CheckpointStatus::Partial),
            needs_orchestrator: with(CheckpointStatus::NeedsOrchestrator),
            timed_out: ids(&|outcome: &StepOutcome| outcome.status() == "timed_out"),
        }
    }

    /// What the caller can safely do next with a run that ended like this.
    fn safe_next_actions(&self, complete: bool, workflow_timed_out: bool) -> Vec<&'static str> {
        let mut actions = Vec::new();
        if self.failed.len() > self.timed_out.len() {
            actions.push("retry_failed_steps");
        }
        if !self.timed_out.is_empty() || workflow_timed_out {
            actions.push("inspect_timed_out_steps_or_retry_with_larger_timeout");
        }
        if !complete && (!self.ready.is_empty() || !self.partial.is_empty()) {
            actions.push("synthesize_from_usable_checkpoints_or_retry");
        }
        if !self.held.is_empty() {
            actions.push("rerun_after_dependencies_checkpoint_ready");
        }
        if !self.needs_orchestrator.is_empty() {
            actions.push("ask_user_or_orchestrator");
        }
        actions
    }
}

/// The proof trail, ending in what the workflow can honestly claim: a failed workflow has no
/// outcome ready at all.
fn proof_states(status: WorkflowStatus) -> Vec<&'static str> {
    let mut proof_states = vec![
        "intent_declared",
        "workflow_validated",
        "subagents_scheduled",
        "dependencies_resolved",
        "conflicts_serialized",
        "summaries_collected",
    ];
    match status {
        WorkflowStatus::Completed => proof_states.push("completion_ready"),
        WorkflowStatus::Failed => {}
        _ => proof_states.push("partial_outcome_ready"),
    }
    proof_states
}

/// One entry of the result's `steps`.
fn step_json(spec: &Spec, outcome: &StepOutcome) -> Value {
    let step = spec.step(&outcome.step_id);
    let mut value = json!({
        "id": outcome.step_id,
        "step_id": outcome.step_id,
        "agent_id": outcome.agent_id,
        "child_session_id": outcome.child_session_id,
        "agent": step.map(|step| step.agent.as_str()),
        "status": outcome.status(),
        "subagent_status": outcome.subagent_status.map(SubagentStatus::as_str),
        "checkpoint_status": outcome.checkpoint_status.as_str(),
        "summary": outcome.summary,
        "wave": outcome.wave,
        "posture": step.map(|step| step.posture.as_str()),
        "read_set": step.map(|step| step.read_set.clone()),
        "write_set": step.map(|step| step.write_set.clone()),
        "checkpoint": outcome.bundle(),
        "safe_next_actions": outcome.checkpoint_status.safe_next_actions(outcome.timed_out),
    });
    if outcome.wave.is_some() {
        value["elapsed_ms"] = json!(outcome.elapsed_ms);
    }
    if let Some(kind) = outcome.error_kind() {
        value["error"] = json!({"kind": kind, "details": outcome.summary});
    }
    if let Some(reason) = &outcome.reason {
        let key = if outcome.checkpoint_status == CheckpointStatus::Held { "held_reason" } else { "reason" };
        value[key] = json!(reason);
    }
    if outcome.timed_out && outcome.subagent_status.is_some() {
        value["timeout_ms"] = json!(spec.timeout_ms.min(outcome.step_timeout_ms));
        value["workflow_timeout_ms"] = json!(spec.timeout_ms);
        value["step_timeout_ms"] = json!(outcome.step_timeout_ms);
        value["next_actions"] = json!(["inspect_child_session_log", "retry_failed_step"]);
    }
    value
}

/// Each dependency edge whose dependency was not decided `checkpoint_ready`, in spec order
/// (WF-SEAM-OBLIGATIONS).
fn seam_obligations(spec: &Spec, outcomes: &[StepOutcome]) -> Vec<Value> {
    let decided = |step_id: &str| outcomes.iter().find(|outcome| outcome.step_id == step_id);
    let mut unresolved = Vec::new();
    for step in &spec.steps {
        for dependency in &step.depends_on {
            let status = decided(dependency).map_or(CheckpointStatus::Held, |outcome| outcome.checkpoint_status);
            if status != CheckpointStatus::CheckpointReady {
                unresolved.push(json!({
                    "step_id": step.id,
                    "depends_on": dependency,
                    "dependency_checkpoint_status": status.as_str(),
                    "obligation": "checkpoint_ready",
                }));
            }
        }
    }
    unresolved
}

/// The `output` line of the tool result: it names the workflow's status, so completed,
/// partial, timed out, needing an orchestrator and failed read apart, and never says
/// "completed" unless it is (WF-RESULT, WF-ACP-PARTIAL).
pub fn output(result: &Value) -> String {
    let count = |key: &str| result.pointer(&format!("/summary/{key}")).and_then(Value::as_u64).unwrap_or(0);
    let id = result["workflow_id"].as_str().unwrap_or_default();
    let status = result["status"].as_str().unwrap_or_default();
    let status = [
        WorkflowStatus::Completed,
        WorkflowStatus::TimedOut,
        WorkflowStatus::NeedsOrchestrator,
        WorkflowStatus::Partial,
        WorkflowStatus::Failed,
    ]
    .into_iter()
    .find(|known| known.as_str() == status)
    .unwrap_or(WorkflowStatus::Failed);
    if status == WorkflowStatus::Completed {
        format!("Workflow {id} completed: {} step(s), {} wave(s).", count("steps"), count("waves"))
    } else {
        format!(
            "Workflow {id} {}: {} checkpoint-ready, {} failed, {} timed out, {} held, {} partial, {} needing orchestrator.",
            status.words(),
            count("checkpoint_ready_steps"),
            count("failed_steps"),
            count("timeout_steps"),
            count("held_steps"),
            count("partial_steps"),
            count("needs_orchestrator_steps")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflows::spec::parse;

    fn outcome(step_id: &str, status: CheckpointStatus, ran: bool) -> StepOutcome {
        StepOutcome {
            step_id: step_id.into(),
            wave: ran.then_some(1),
            agent_id: ran.then(|| format!("sub_{step_id}")),
            child_session_id: None,
            subagent_status: ran.then_some(if status == CheckpointStatus::Failed {
                SubagentStatus::Failed
            } else {
                SubagentStatus::Completed
            }),
            checkpoint_status: status,
            summary: String::new(),
            reason: None,
            timed_out: false,
            elapsed_ms: Some(0),
            step_timeout_ms: 1,
        }
    }

    #[test]
    fn a_step_the_workflow_closed_is_failed_and_timed_out_whatever_its_summary() {
        let spec = parse(&json!({"steps": [{"id": "a", "task": "x", "timeout_ms": 5}]}), 1).unwrap();
        let last = crate::event::object(json!({
            "status": "completed", "summary": "done", "child_session_id": "wf_1-a", "elapsed_ms": 3,
        }));
        let ran = StepOutcome::ran(&spec, "a", 1, "sub_1", &last, false);
        assert_eq!(
            (ran.checkpoint_status, ran.timed_out, ran.reason),
            (CheckpointStatus::CheckpointReady, false, None)
        );
        assert_eq!((ran.elapsed_ms, ran.step_timeout_ms), (Some(3), 5));
        let closed = StepOutcome::ran(&spec, "a", 1, "sub_1", &last, true);
        assert_eq!((closed.checkpoint_status, closed.timed_out), (CheckpointStatus::Failed, true));
        assert_eq!(closed.reason.as_deref(), Some("closed_by_workflow_timeout"));
        assert_eq!(closed.status(), "timed_out");
    }

    #[test]
    fn a_workflow_whose_every_step_failed_is_failed_and_owes_its_dependents() {
        let spec =
            parse(&json!({"steps": [{"id": "a", "task": "x"}, {"id": "b", "task": "y", "depends_on": ["a"]}]}), 1)
                .unwrap();
        let failed = result(
            &spec,
            &[outcome("a", CheckpointStatus::Failed, true), outcome("b", CheckpointStatus::Held, false)],
            &[],
            false,
        );
        assert_eq!((failed["ok"].clone(), failed["status"].clone()), (json!(false), json!("failed")));
        assert!(!failed["proof_states"].as_array().unwrap().iter().any(|proof| proof == "partial_outcome_ready"));
        assert_eq!(
            failed["unresolved_seam_obligations"],
            json!([{"step_id": "b", "depends_on": "a", "dependency_checkpoint_status": "failed", "obligation": "checkpoint_ready"}])
        );
        assert!(output(&failed).starts_with("Workflow wf_1 failed: 0 checkpoint-ready, 1 failed, 0 timed out, 1 held"));
    }

    #[test]
    fn ok_only_when_every_step_is_ready() {
        let spec =
            parse(&serde_json::json!({"steps": [{"id": "a", "task": "x"}, {"id": "b", "task": "y"}]}), 1).unwrap();
        let done = result(
            &spec,
            &[
                outcome("a", CheckpointStatus::CheckpointReady, true),
                outcome("b", CheckpointStatus::CheckpointReady, true),
            ],
            &[],
            false,
        );
        assert_eq!((done["ok"].clone(), done["status"].clone()), (json!(true), json!("completed")));
        let partial = result(
            &spec,
            &[outcome("a", CheckpointStatus::CheckpointReady, true), outcome("b", CheckpointStatus::Held, false)],
            &[],
            false,
        );
        assert_eq!((partial["ok"].clone(), partial["status"].clone()), (json!(false), json!("partial")));
        assert_eq!(partial["held_steps"], json!(["b"]));
        assert_eq!(partial["usable_checkpoints"][0]["step_id"], "a");
        assert_eq!(
            output(&partial),
            "Workflow wf_1 partial: 1 checkpoint-ready, 0 failed, 0 timed out, 1 held, 0 partial, 0 needing orchestrator."
        );
        assert_eq!(
            partial["safe_next_actions"],
            json!(["synthesize_from_usable_checkpoints_or_retry", "rerun_after_dependencies_checkpoint_ready"])
        );
    }
}
