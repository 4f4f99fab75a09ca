//! What the Log says, read for several rules: the child Sessions it records `detached`, and each
//! `run_workflow` result with the Log's evidence before it ([`WorkflowRun`]), which the workflow
//! rules judge the result against.

use std::collections::HashMap;

use gauntlet_agent::EventType;
use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::log_line::Line;

/// The child Sessions the root Log records as `detached`.
pub(crate) fn detached_children<'a>(evidence: &'a Evidence) -> Vec<&'a str> {
    evidence
        .lines
        .iter()
        .filter_map(Line::subagent_event)
        .filter(|event| event.subagent_status() == Some(SubagentStatus::Detached))
        .filter_map(|event| event.child_session_id)
        .collect()
}

/// One `run_workflow` result of a Log (a `tool_result` whose `workflow` has `steps`), with
/// what the Log said before it: each Subagent's last `subagent_event`, and its workflow's
/// `workflow_started` graph and `workflow_finished`. The workflow rules judge the result
/// against this evidence, not against each other's claims.
pub(crate) struct WorkflowRun<'e> {
    /// The result's seq, for messages.
    pub(crate) seq: u64,
    /// The workflow's id.
    pub(crate) id: &'e str,
    /// The tool result's `output` line.
    pub(crate) output: &'e str,
    /// The `workflow` object.
    pub(crate) workflow: &'e Value,
    /// Each Subagent's last `subagent_event` data before the result, by id.
    pub(crate) subagents: HashMap<&'e str, &'e Value>,
    /// The `workflow_started` graph's steps.
    pub(crate) graph: &'e [Value],
    /// The `workflow_finished` data, if recorded.
    pub(crate) finished: Option<&'e Value>,
}

impl<'e> WorkflowRun<'e> {
    /// The Step Outcomes.
    pub(crate) fn steps(&self) -> &'e [Value] {
        self.workflow.get("steps").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// How findings name it: `workflow <id> (seq <seq>)`.
    pub(crate) fn name(&self) -> String {
        format!("workflow {} (seq {})", self.id, self.seq)
    }

    /// The Subagent a step ran as, by the step's `agent_id`.
    pub(crate) fn subagent_of(&self, step: &Value) -> Option<&'e Value> {
        step.get("agent_id").and_then(Value::as_str).and_then(|id| self.subagents.get(id).copied())
    }

    /// The steps of each list a result gives (WF-RESULT), keyed as the result and its summary
    /// key them, read from the Step Outcomes.
    pub(crate) fn lists(&self) -> [(&'static str, Vec<&'e str>); 6] {
        let ids = |pick: &dyn Fn(&Value) -> bool| -> Vec<&'e str> {
            self.steps().iter().filter(|step| pick(step)).map(|step| text(step, "step_id")).collect()
        };
        let checkpoint = |status: &'static str| move |step: &Value| text(step, "checkpoint_status") == status;
        [
            ("held_steps", ids(&checkpoint("held"))),
            ("failed_steps", ids(&checkpoint("failed"))),
            ("partial_steps", ids(&checkpoint("partial"))),
            ("needs_orchestrator_steps", ids(&checkpoint("needs_orchestrator"))),
            ("timeout_steps", ids(&|step| text(step, "status") == "timed_out")),
            ("checkpoint_ready_steps", ids(&checkpoint("checkpoint_ready"))),
        ]
    }

    /// The status ADR 0026 gives a workflow whose steps ended as its Step Outcomes say: the
    /// first of those that hold, in gauntlet's precedence.
    pub(crate) fn derived_status(&self) -> &'static str {
        self.statuses_that_hold()[0]
    }

    /// Every ADR 0026 workflow status its Step Outcomes support, in gauntlet's precedence
    /// (`timed_out`, `needs_orchestrator`, `partial`, `failed`): seed 000's states overlap, so
    /// which of several comes first is gauntlet's choice; `completed` holds alone.
    pub(crate) fn statuses_that_hold(&self) -> Vec<&'static str> {
        let steps = self.steps();
        let any = |pick: &dyn Fn(&Value) -> bool| steps.iter().any(pick);
        let checkpoint = |status: &'static str| move |step: &Value| text(step, "checkpoint_status") == status;
        if !steps.is_empty() && steps.iter().all(checkpoint("checkpoint_ready")) {
            return vec!["completed"];
        }
        let usable = any(&checkpoint("checkpoint_ready")) || any(&checkpoint("partial"));
        let holds = [
            any(&|step| text(step, "status") == "timed_out" || text(step, "held_reason") == "workflow_timeout"),
            any(&checkpoint("needs_orchestrator")),
            usable,
            !usable,
        ];
        let names = ["timed_out", "needs_orchestrator", "partial", "failed"];
        names.into_iter().zip(holds).filter_map(|(name, holds)| holds.then_some(name)).collect()
    }
}

/// A string field of a JSON object, `""` when absent.
pub(crate) fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The strings of an array field of a JSON object, none when absent.
pub(crate) fn strings<'v>(value: &'v Value, key: &str) -> Vec<&'v str> {
    value.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Every `run_workflow` result of the Log, in order.
pub(crate) fn workflow_runs<'e>(evidence: &'e Evidence) -> Vec<WorkflowRun<'e>> {
    let mut runs = Vec::new();
    let mut subagents: HashMap<&str, &Value> = HashMap::new();
    let mut graphs: HashMap<&str, &[Value]> = HashMap::new();
    let mut finished: HashMap<&str, &Value> = HashMap::new();
    for line in &evidence.lines {
        match line.kind.known() {
            Some(EventType::SubagentEvent) => {
                if let Some(id) = line.subagent_event().and_then(|event| event.subagent_id) {
                    subagents.insert(id, &line.data);
                }
            }
            Some(EventType::WorkflowEvent) => {
                let Some(event) = line.workflow_event() else { continue };
                let Some(id) = event.workflow_id else { continue };
                match event.kind {
                    Some("workflow_started") => {
                        let steps = event.graph.and_then(|graph| graph.get("steps")?.as_array());
                        graphs.insert(id, steps.map_or(&[], Vec::as_slice));
                        finished.remove(id);
                    }
                    Some("workflow_finished") => {
                        finished.insert(id, &line.data);
                    }
                    _ => {}
                }
            }
            Some(EventType::ToolResult) => {
                let Some(result) = line.tool_result() else { continue };
                let Some(workflow) = result.workflow.filter(|workflow| workflow["steps"].is_array()) else {
                    continue;
                };
                let id = text(workflow, "workflow_id");
                runs.push(WorkflowRun {
                    seq: line.seq.unwrap_or_default(),
                    id,
                    output: result.output.unwrap_or_default(),
                    workflow,
                    subagents: subagents.clone(),
                    graph: graphs.get(id).copied().unwrap_or_default(),
                    finished: finished.get(id).copied(),
                });
            }
            _ => {}
        }
    }
    runs
}

/// The keys of `keys` that `data` leaves out, null or empty.
pub(crate) fn missing<'k>(data: &Value, keys: &[&'k str]) -> Vec<&'k str> {
    keys.iter()
        .copied()
        .filter(|key| match data.get(*key) {
            None | Some(Value::Null) => true,
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::String(text)) => text.is_empty(),
            Some(_) => false,
        })
        .collect()
}
