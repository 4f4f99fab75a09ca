//! Workflow terminal states from the `workflow_event` spine of the parent's Log (ADR 0026
//! "Workflow terminal states"; ADR 0014; WF-TERMINAL-EVIDENCE).
//!
//! The state is derived from step evidence, never copied from what the runtime concluded:
//! `completed` when every step of the graph was decided `checkpoint_ready`; otherwise
//! `timed_out` when a step or the workflow ran out of time, `needs_orchestrator` when a step
//! asks for a decision, `partial` when some checkpoint is usable, else `failed`.

use std::collections::BTreeMap;

use gauntlet_agent::event::SubagentStatus;
use gauntlet_agent::workflows::checkpoint::CheckpointStatus;
use serde::{Deserialize, Serialize};

use crate::log_line::Line;

/// The ADR 0026 name of how a Workflow ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowTerminal {
    /// Every step is checkpoint-ready.
    Completed,
    /// Some usable evidence, not full completion.
    Partial,
    /// Nothing usable.
    Failed,
    /// A step or the workflow ran out of time.
    TimedOut,
    /// A step needs a human or parent decision.
    NeedsOrchestrator,
}

/// What the spine says about one Workflow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowAudit {
    /// Its id.
    pub workflow_id: String,
    /// The derived state; `None` without `workflow_finished`.
    pub terminal_state: Option<WorkflowTerminal>,
    /// `workflow_finished.ok`, as the runtime claimed it.
    pub ok: Option<bool>,
    /// Each step's decided checkpoint status, by step id.
    pub steps: BTreeMap<String, String>,
    /// The step ids scheduled in each wave.
    pub waves: Vec<Vec<String>>,
}

/// Every Workflow of the Log, in start order.
pub fn audit(lines: &[Line]) -> Vec<WorkflowAudit> {
    let mut found: Vec<(WorkflowAudit, Vec<String>, bool)> = Vec::new();
    for event in lines.iter().filter_map(Line::workflow_event) {
        let Some(id) = event.workflow_id else { continue };
        let kind = event.kind.unwrap_or_default();
        if kind == "workflow_started" {
            let graph: Vec<String> = event
                .graph
                .and_then(|graph| graph.get("steps")?.as_array())
                .map(|steps| steps.iter().filter_map(|step| step.get("id")?.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            let audit = WorkflowAudit {
                workflow_id: id.to_owned(),
                terminal_state: None,
                ok: None,
                steps: BTreeMap::new(),
                waves: Vec::new(),
            };
            found.push((audit, graph, false));
            continue;
        }
        let Some((audit, _, timed_out)) = found.iter_mut().rev().find(|(audit, _, _)| audit.workflow_id == id) else {
            continue;
        };
        let step = event.step_id.unwrap_or_default().to_owned();
        match kind {
            "step_scheduled" => {
                let wave = event.wave.unwrap_or(1).max(1) as usize;
                while audit.waves.len() < wave {
                    audit.waves.push(Vec::new());
                }
                audit.waves[wave - 1].push(step);
            }
            "checkpoint_decided" => {
                let status = event.checkpoint_status.unwrap_or("?").to_owned();
                let reason = event.reason.unwrap_or_default();
                if event.subagent_status.and_then(SubagentStatus::parse) == Some(SubagentStatus::TimedOut)
                    || reason.contains("workflow_timeout")
                {
                    *timed_out = true;
                }
                audit.steps.insert(step, status);
            }
            "workflow_finished" => {
                audit.ok = event.ok;
                audit.terminal_state = Some(WorkflowTerminal::Failed);
            }
            _ => {}
        }
    }
    found
        .into_iter()
        .map(|(mut audit, graph, timed_out)| {
            if audit.terminal_state.is_some() {
                audit.terminal_state = Some(derive(&audit.steps, &graph, timed_out));
            }
            audit
        })
        .collect()
}

fn derive(steps: &BTreeMap<String, String>, graph: &[String], timed_out: bool) -> WorkflowTerminal {
    let status = |id: &String| steps.get(id).and_then(|status| CheckpointStatus::parse(status));
    let all = || graph.iter().map(status);
    if !graph.is_empty() && all().all(|status| status == Some(CheckpointStatus::CheckpointReady)) {
        WorkflowTerminal::Completed
    } else if timed_out {
        WorkflowTerminal::TimedOut
    } else if all().any(|status| status == Some(CheckpointStatus::NeedsOrchestrator)) {
        WorkflowTerminal::NeedsOrchestrator
    } else if all().any(|status| matches!(status, Some(CheckpointStatus::CheckpointReady | CheckpointStatus::Partial)))
    {
        WorkflowTerminal::Partial
    } else {
        WorkflowTerminal::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_kind::EventKind;
    use gauntlet_agent::EventType;
    use serde_json::{Value, json};

    fn line(data: Value) -> Line {
        Line { id: None, seq: Some(0), kind: EventKind::Known(EventType::WorkflowEvent), data }
    }

    #[test]
    fn states_come_from_step_evidence() {
        let lines = [
            line(
                json!({"kind": "workflow_started", "workflow_id": "w", "graph": {"steps": [{"id": "a"}, {"id": "b"}]}}),
            ),
            line(json!({"kind": "step_scheduled", "workflow_id": "w", "step_id": "a", "wave": 1})),
            line(
                json!({"kind": "checkpoint_decided", "workflow_id": "w", "step_id": "a", "checkpoint_status": "checkpoint_ready"}),
            ),
            line(
                json!({"kind": "checkpoint_decided", "workflow_id": "w", "step_id": "b", "checkpoint_status": "held"}),
            ),
            line(json!({"kind": "workflow_finished", "workflow_id": "w", "ok": true})),
        ];
        let audits = audit(&lines);
        assert_eq!(audits[0].terminal_state, Some(WorkflowTerminal::Partial));
        assert_eq!(audits[0].ok, Some(true), "the claim is kept, for the invariant to judge");
        assert_eq!(audits[0].waves, [["a"]]);
    }
}
