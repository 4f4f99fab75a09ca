//! The `run_workflow` tool: its definition and the run, phase by phase.

use std::time::Duration;

use serde_json::{Value, json};

use super::{decisions, result, spec, spine, wave};
use crate::control::deadline_after;
use crate::event::{Data, object};
use crate::log::LogError;
use crate::session::Session;
use crate::subagents::Subagents;
use decisions::Decisions;
use spec::Spec;
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
    // An invalid spec is a tool error, and nothing runs (WF-SPEC-INVALID).
    let spec = match spec::parse(args, spine::ordinal(session.history())) {
        Ok(spec) => spec,
        Err(failure) => return Ok(failure.into_result()),
    };
    spine::started(session, &spec)?;
    let deadline = deadline_after(Duration::from_millis(spec.timeout_ms));
    let mut decisions = Decisions::default();
    let mut timed_out = false;
    for number in 1.. {
        decisions.hold_blocked(session, &spec)?;
        let steps = decisions.next_wave(&spec);
        if steps.is_empty() {
            break;
        }
        let mut wave = Wave::start(subagents, session, &spec, number, steps, decisions.outcomes())?;
        timed_out = !wave.wait(subagents, session, deadline).await?;
        decisions.decide(session, &spec, subagents, wave)?;
        if timed_out {
            decisions.hold_rest(session, &spec)?;
            break;
        }
    }
    finish(session, &spec, &decisions, timed_out)
}

/// The result (WF-RESULT), recorded as `workflow_finished` before the tool returns it. The
/// tool call succeeds whatever the workflow came to; the workflow's own `ok` says whether it
/// completed (WF-OK-ONLY-COMPLETE).
fn finish(session: &mut Session, spec: &Spec, decisions: &Decisions, timed_out: bool) -> Result<Data, LogError> {
    let workflow = result::result(spec, &decisions.in_spec_order(spec), decisions.waves(), timed_out);
    spine::finished(session, &spec.id, &workflow, timed_out, decisions.waves())?;
    Ok(object(json!({"ok": true, "output": result::output(&workflow), "workflow": workflow})))
}
