//! The `workflow_event` spine a run leaves in the parent's Log (WF-SPINE): one function per
//! kind, so the shapes the auditor derives a Workflow's state from are written in one place.

use serde_json::{Value, json};

use super::checkpoint::CheckpointStatus;
use super::result::StepOutcome;
use super::spec::{Spec, Step};
use crate::event::{Event, EventType, Payload, SubagentStatus, object};
use crate::log::LogError;
use crate::session::Session;

/// This run's place among the Session's workflows (1-based), counted from the
/// `workflow_started` events already in its Log; it names a spec without an id.
pub(super) fn ordinal(history: &[Event]) -> usize {
    history
        .iter()
        .filter(|event| event.kind() == EventType::WorkflowEvent && event.str_field("kind") == Some("workflow_started"))
        .count()
        + 1
}

/// Records one `workflow_event`.
fn record(session: &mut Session, kind: &str, workflow_id: &str, fields: Value) -> Result<(), LogError> {
    let mut data = object(json!({"kind": kind, "workflow_id": workflow_id}));
    data.extend(object(fields));
    session.record(Payload::workflow_event(data))
}

/// `workflow_started`: the graph and the limits, before any step runs.
pub(super) fn started(session: &mut Session, spec: &Spec) -> Result<(), LogError> {
    let graph: Vec<Value> = spec
        .steps
        .iter()
        .map(|step| {
            json!({
                "id": step.id,
                "agent": step.agent,
                "depends_on": step.depends_on,
                "posture": step.posture.as_str(),
                "read_set": step.read_set,
                "write_set": step.write_set,
                "timeout_ms": step.timeout_ms,
            })
        })
        .collect();
    record(
        session,
        "workflow_started",
        &spec.id,
        json!({
            "workflow_name": spec.name,
            "graph": {"steps": graph, "step_count": spec.steps.len()},
            "limits": {"max_concurrency": spec.max_concurrency, "timeout_ms": spec.timeout_ms},
        }),
    )
}

/// `step_scheduled`: `step` starts in wave `wave`.
pub(super) fn scheduled(session: &mut Session, spec_id: &str, step: &Step, wave: usize) -> Result<(), LogError> {
    record(
        session,
        "step_scheduled",
        spec_id,
        json!({
            "step_id": step.id,
            "wave": wave,
            "depends_on": step.depends_on,
            "agent": step.agent,
            "posture": step.posture.as_str(),
        }),
    )
}

/// A step that never runs: `step_held`, then its `checkpoint_decided` (WF-HELD).
pub(super) fn held(session: &mut Session, spec_id: &str, step_id: &str, reason: &str) -> Result<(), LogError> {
    record(
        session,
        "step_held",
        spec_id,
        json!({"step_id": step_id, "checkpoint_status": "held", "dependent_safe": false, "reason": reason}),
    )?;
    record(
        session,
        "checkpoint_decided",
        spec_id,
        json!({
            "step_id": step_id,
            "agent_id": null,
            "child_session_id": null,
            "subagent_status": null,
            "checkpoint_status": "held",
            "dependent_safe": false,
            "reason": reason,
        }),
    )
}

/// `checkpoint_decided` for a step that ran: the Subagent's raw status beside the derived
/// checkpoint, with its bundle (WF-CHECKPOINT).
pub(super) fn decided(session: &mut Session, spec_id: &str, outcome: &StepOutcome) -> Result<(), LogError> {
    let bundle = outcome.bundle();
    let checkpoint_status = outcome.checkpoint_status;
    record(
        session,
        "checkpoint_decided",
        spec_id,
        json!({
            "step_id": outcome.step_id,
            "agent_id": outcome.agent_id,
            "child_session_id": outcome.child_session_id,
            "subagent_status": outcome.subagent_status.map(SubagentStatus::as_str),
            "checkpoint_status": checkpoint_status.as_str(),
            "dependent_safe": checkpoint_status == CheckpointStatus::CheckpointReady,
            "reason": outcome.reason,
            "checkpoint": {
                "status": checkpoint_status.as_str(),
                "version": 2,
                "summary": bundle["summary"],
                "known_limitations": bundle["known_limitations"],
                "typed_schema_ids": ["workflow_checkpoint.v1"],
            },
        }),
    )
}

/// `workflow_finished`: the result's status, `ok` and next actions, and the waves as run.
pub(super) fn finished(
    session: &mut Session,
    spec_id: &str,
    workflow: &Value,
    timed_out: bool,
    waves: &[Vec<String>],
) -> Result<(), LogError> {
    record(
        session,
        "workflow_finished",
        spec_id,
        json!({
            "status": workflow["status"],
            "ok": workflow["ok"],
            "timed_out": timed_out,
            "summary": workflow["summary"],
            "safe_next_actions": workflow["safe_next_actions"],
            "proof_states": workflow["proof_states"],
            "waves": waves,
        }),
    )
}
