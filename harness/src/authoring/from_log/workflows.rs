//! The `[[expect.workflow]]` tables of a scenario written from a Log: one per `run_workflow`
//! call of the reproduced process, in call order, as `check_workflows` in
//! [`crate::judge::expectations`] reads them: a tool error's kind, or the state, waves and step
//! checkpoints the Workflow's `workflow_event` spine shows ([`crate::audit::workflows`]).

use std::fmt::Write;

use serde_json::Value;

use super::{Event, quoted, strings};
use crate::audit::Audit;

/// The `[[expect.workflow]]` tables, rendered, for the `run_workflow` calls among `events`.
pub(super) fn expectations(events: &[Event], audited: &Audit) -> Vec<String> {
    let calls = events
        .iter()
        .filter(|event| event.line.kind == "tool_call" && event.line.str_field("name") == Some("run_workflow"))
        .filter_map(|event| event.line.str_field("call_id"));
    let mut tables = Vec::new();
    for call_id in calls {
        let Some(result) = events
            .iter()
            .find(|event| event.line.kind == "tool_result" && event.line.str_field("call_id") == Some(call_id))
        else {
            continue;
        };
        let mut table = String::from("[[expect.workflow]]\n");
        if let Some(kind) = result.line.data.pointer("/error/kind").and_then(Value::as_str) {
            let _ = writeln!(table, "error = {}", quoted(kind));
            tables.push(table);
            continue;
        }
        let id = result.line.data.pointer("/workflow/workflow_id").and_then(Value::as_str).unwrap_or_default();
        let Some(workflow) = audited.workflows.iter().find(|workflow| workflow.workflow_id == id) else { continue };
        if let Some(status) = workflow.terminal_state.and_then(|state| serde_json::to_value(state).ok())
            && let Some(status) = status.as_str()
        {
            let _ = writeln!(table, "status = {}", quoted(status));
        }
        let waves: Vec<String> = workflow.waves.iter().map(|wave| strings(wave)).collect();
        let _ = writeln!(table, "waves = [{}]", waves.join(", "));
        let steps: toml_edit::InlineTable = workflow.steps.iter().collect();
        let _ = writeln!(table, "steps = {steps}");
        tables.push(table);
    }
    tables
}
