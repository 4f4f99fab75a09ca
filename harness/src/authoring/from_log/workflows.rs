//! The `[[expect.workflow]]` tables of a scenario written from a Log: one per `run_workflow`
//! call of the reproduced process, in call order, as `check_workflows` in
//! [`gauntlet_judge::judge::expectations`] reads them: a tool error's kind, or the state, waves and step
//! checkpoints the Workflow's `workflow_event` spine shows ([`gauntlet_judge::audit::workflows`]).

use toml_edit::{Array, InlineTable, Table, value};

use super::Event;
use gauntlet_judge::audit::Audit;

/// The `[[expect.workflow]]` tables for the `run_workflow` calls among `events`.
pub(super) fn expectations(events: &[Event], audited: &Audit) -> Vec<Table> {
    let calls = events
        .iter()
        .filter_map(|event| event.line.tool_call())
        .filter(|call| call.name == Some("run_workflow"))
        .filter_map(|call| call.call_id);
    let mut tables = Vec::new();
    for call_id in calls {
        let Some(result) =
            events.iter().filter_map(|event| event.line.tool_result()).find(|result| result.call_id == Some(call_id))
        else {
            continue;
        };
        let mut table = Table::new();
        if let Some(kind) = result.error_kind() {
            table.insert("error", value(kind));
            tables.push(table);
            continue;
        }
        let id = result.workflow.and_then(|workflow| workflow.get("workflow_id")?.as_str()).unwrap_or_default();
        let Some(workflow) = audited.workflows.iter().find(|workflow| workflow.workflow_id == id) else { continue };
        if let Some(status) = workflow.terminal_state.and_then(|state| serde_json::to_value(state).ok())
            && let Some(status) = status.as_str()
        {
            table.insert("status", value(status));
        }
        let waves: Array = workflow.waves.iter().map(|wave| wave.iter().collect::<Array>()).collect();
        table.insert("waves", value(waves));
        table.insert("steps", value(workflow.steps.iter().collect::<InlineTable>()));
        tables.push(table);
    }
    tables
}
