//! Workflows: structural orchestration over Subagents through the `run_workflow` tool
//! (ADR 0014, ADR 0026 "Workflow terminal states"; pixir.md 8; WF-*).
//!
//! The scheduler validates the spec ([`spec`]), then runs waves ([`plan`]): each step of a
//! wave is a Subagent, and a step starts only when its dependencies are `checkpoint_ready`.
//! When a wave ends, each step's `checkpoint_status` is decided ([`checkpoint`]); steps that
//! can no longer start are held. The workflow's timeout closes the steps still running and
//! holds the rest. Every decision is a durable `workflow_event` in the parent's Log
//! (`workflow_started`, `step_scheduled`, `step_held`, `checkpoint_decided`,
//! `workflow_finished`), and the tool returns the result ([`result`]): `ok: true` only for
//! full completion.

pub mod checkpoint;
pub mod plan;
pub mod result;
pub mod spec;
mod spine;
mod wave;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::control::deadline_after;
use crate::event::{Data, object};
use crate::log::LogError;
use crate::session::Session;
use crate::subagents::Subagents;
use checkpoint::CheckpointStatus;
use result::StepOutcome;
use wave::Wave;

/// The `run_workflow` tool definition.
pub fn definition() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "function",
        "name": "run_workflow",
        "description": "Run a workflow: steps as subagents in dependency waves; returns step outcomes and checkpoint bundles.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "name": {"type": "string"},
                "max_concurrency": {"type": "integer", "minimum": 1},
                "timeout_ms": {"type": "integer", "minimum": 1},
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "task": {"type": "string"},
                            "agent": {"type": "string"},
                            "depends_on": strings,
                            "posture": {"type": "string", "enum": ["read_only", "writer"]},
                            "read_set": strings,
                            "write_set": strings,
                            "timeout_ms": {"type": "integer", "minimum": 1},
                        },
                        "required": ["task"],
                    },
                },
            },
            "required": ["steps"],
            "additionalProperties": false,
        },
    })
}

/// `run_workflow {id?, name?, max_concurrency?, timeout_ms?, steps}`: each step a child of
/// `subagents`, the parent's one manager.
pub(crate) async fn run_workflow(
    subagents: &mut Subagents,
    session: &mut Session,
    args: &Value,
) -> Result<Data, LogError> {
    let spec = match spec::parse(args, spine::ordinal(session.history())) {
        Ok(spec) => spec,
        Err(failure) => return Ok(failure.into_result()),
    };
    spine::started(session, &spec)?;
    let deadline = deadline_after(Duration::from_millis(spec.timeout_ms));
    let mut decided: BTreeMap<String, CheckpointStatus> = BTreeMap::new();
    let mut outcomes: BTreeMap<String, StepOutcome> = BTreeMap::new();
    let mut waves: Vec<Vec<String>> = Vec::new();
    let mut workflow_timed_out = false;
    loop {
        // Every step of an earlier wave has started.
        let started = waves.concat();
        // Hold what can never start, until nothing changes (a held step holds its dependents).
        loop {
            let blocked = plan::blocked(&spec, &decided, &started);
            if blocked.is_empty() {
                break;
            }
            for step_id in blocked {
                spine::held(session, &spec.id, &step_id, "dependency_not_checkpoint_ready")?;
                decided.insert(step_id.clone(), CheckpointStatus::Held);
                outcomes.insert(
                    step_id.clone(),
                    StepOutcome::held(&spec, &step_id, "dependency_not_checkpoint_ready", false),
                );
            }
        }
        let wave = plan::next_wave(&spec, &decided, &started);
        if wave.is_empty() {
            break;
        }
        let mut wave = Wave::start(subagents, session, &spec, waves.len() + 1, wave, &outcomes)?;
        waves.push(wave.steps.clone());
        workflow_timed_out = !wave.wait(subagents, session, deadline).await?;
        for outcome in wave.outcomes(subagents, &spec) {
            spine::decided(session, &spec.id, &outcome)?;
            decided.insert(outcome.step_id.clone(), outcome.checkpoint_status);
            outcomes.insert(outcome.step_id.clone(), outcome);
        }
        if workflow_timed_out {
            let pending: Vec<String> =
                spec.steps.iter().filter(|step| !decided.contains_key(&step.id)).map(|step| step.id.clone()).collect();
            for step_id in pending {
                spine::held(session, &spec.id, &step_id, "workflow_timeout")?;
                decided.insert(step_id.clone(), CheckpointStatus::Held);
                outcomes.insert(step_id.clone(), StepOutcome::held(&spec, &step_id, "workflow_timeout", true));
            }
            break;
        }
    }
    let ordered: Vec<StepOutcome> = spec.steps.iter().filter_map(|step| outcomes.get(&step.id).cloned()).collect();
    let workflow = result::result(&spec, &ordered, &waves, workflow_timed_out);
    spine::finished(session, &spec.id, &workflow, workflow_timed_out, &waves)?;
    Ok(object(json!({"ok": true, "output": result::output(&workflow), "workflow": workflow})))
}
