//! SUB-ACP-ITEM: ACP shows every Subagent the parent's Log ends, as completed exactly when the
//! Log ends it `completed` or `closed`; every other terminal state ends its stable tool item
//! `failed`.
//! Also WF-ACP-PARTIAL: a `run_workflow` call whose workflow is not `ok` in the Log never ends
//! `completed` in ACP (ADR 0014 "run_workflow renders partial status without claiming
//! completion"; pixir.md 5.1).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Invariant, Scope};
use crate::judge::Evidence;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-ACP-ITEM",
    also: &["WF-ACP-PARTIAL"],
    name: "delegation_acp_truthful",
    scope: Scope::Run,
    check,
};

fn check(evidence: &Evidence) -> Vec<String> {
    // The last ACP status of each tool item, live and on load.
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for entry in evidence.capture.acp.iter().chain(&evidence.capture.acp_load) {
        let Some(update) = entry.pointer("/message/params/update") else { continue };
        let (Some(id), Some(status)) =
            (update.get("toolCallId").and_then(Value::as_str), update.get("status").and_then(Value::as_str))
        else {
            continue;
        };
        last.insert(id.to_owned(), status.to_owned());
    }
    let mut problems = Vec::new();
    for subagent in &evidence.audit.subagents {
        let Some(status) = subagent.status.filter(|status| status.is_terminal()) else { continue };
        let suffix = format!(":subagent:{}", subagent.subagent_id);
        let shown = last.iter().find(|(id, _)| id.ends_with(&suffix)).map(|(_, shown)| shown.as_str());
        let completed = matches!(status.as_str(), "completed" | "closed");
        match shown {
            None => problems.push(format!("ACP never shows {}, which the Log ends `{status}`", subagent.subagent_id)),
            Some("completed") if !completed => {
                problems.push(format!("ACP shows {} completed, but the Log ends it `{status}`", subagent.subagent_id));
            }
            Some("failed") if completed => {
                problems.push(format!("ACP shows {} failed, but the Log ends it `{status}`", subagent.subagent_id));
            }
            _ => {}
        }
    }
    for line in evidence.lines.iter().filter(|line| line.kind == "tool_result") {
        let Some(workflow) = line.data.get("workflow") else { continue };
        let Some(call_id) = line.str_field("call_id") else { continue };
        if workflow.get("ok").and_then(Value::as_bool) != Some(true)
            && last.get(call_id).map(String::as_str) == Some("completed")
        {
            problems.push(format!(
                "ACP shows the run_workflow call {call_id} completed, but workflow {} is not ok",
                workflow.get("workflow_id").and_then(Value::as_str).unwrap_or("?")
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{capture, check, entry};
    use serde_json::json;

    fn update(id: &str, status: &str) -> Value {
        entry(
            "agent",
            json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status}}}),
        )
    }

    #[test]
    fn a_timed_out_child_or_a_partial_workflow_shown_completed_is_caught() {
        let mut capture = capture(
            &[
                ("subagent_event", json!({"event": "timed_out", "status": "timed_out", "subagent_id": "sub_1"})),
                (
                    "tool_result",
                    json!({"call_id": "call_1", "ok": true, "workflow": {"workflow_id": "wf_1", "ok": false}}),
                ),
            ],
            &[],
        );
        capture.acp = vec![update("gauntlet:s:subagent:sub_1", "completed"), update("call_1", "completed")];
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "ACP shows sub_1 completed, but the Log ends it `timed_out`",
                "ACP shows the run_workflow call call_1 completed, but workflow wf_1 is not ok",
            ]
        );
    }

    #[test]
    fn a_completed_child_shown_failed_or_a_child_never_shown_is_caught() {
        let mut capture = capture(
            &[
                ("subagent_event", json!({"event": "finished", "status": "completed", "subagent_id": "sub_1"})),
                ("subagent_event", json!({"event": "failed", "status": "failed", "subagent_id": "sub_2"})),
            ],
            &[],
        );
        capture.acp = vec![update("gauntlet:s:subagent:sub_1", "failed")];
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "ACP shows sub_1 failed, but the Log ends it `completed`",
                "ACP never shows sub_2, which the Log ends `failed`"
            ]
        );
    }
}
