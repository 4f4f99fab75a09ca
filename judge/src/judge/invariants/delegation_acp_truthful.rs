//! SUB-ACP-ITEM: ACP never shows a Subagent completed that the parent's Log ends failed,
//! timed out, cancelled or detached, nor one that completed failed (seed 000: presenters "must
//! not collapse failure or partial states into clean completion"; a `closed` child, which may
//! never have run, may read either way). Read from the reference's item, `...:subagent:<id>`
//! (pixir.md 5.1). That each child is shown as one stable item, opened once by a `tool_call`
//! before any update, whose statuses follow the child's lifecycle in the Log, is the
//! reference's (SUB-REF-DETAILS, a MAY).
//! Also WF-ACP-PARTIAL: a `run_workflow` call whose workflow is not `ok` in the Log never ends
//! `completed` in ACP (ADR 0014 "run_workflow renders partial status without claiming
//! completion"; pixir.md 5.1), and its last live update shows the result's output line, which
//! names the workflow's status, so completed, partial, timed-out, held and failed workflows read
//! apart ("ACP presentation distinguishes completed, partial, held, and failed outcomes";
//! `workflow_result_agrees` judges the line itself).

use std::collections::BTreeMap;

use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::log_line::Line;

/// ACP's `sessionUpdate` that opens a tool call's item.
const TOOL_CALL_UPDATE: &str = "tool_call"; // ACP's name, not a Log type

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-ACP-ITEM",
    also: &[WORKFLOW, REFERENCE],
    name: "delegation_acp_truthful",
    applies: Scope::Run,
    check,
};

/// What a `run_workflow` call shown completed, or without its result's line, breaks.
const WORKFLOW: &str = "WF-ACP-PARTIAL";

/// What a child shown otherwise than as the reference's one stable item breaks.
const REFERENCE: &str = "SUB-REF-DETAILS";

fn check(evidence: &Evidence) -> Vec<Violation> {
    // The last ACP status of each tool item, live and on load.
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    // The text of each tool item's last live update that has content.
    let mut shown_text: BTreeMap<&str, String> = BTreeMap::new();
    for entry in &evidence.capture.acp {
        let Some(update) = entry.pointer("/message/params/update") else { continue };
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { continue };
        let Some(content) = update.get("content").and_then(Value::as_array) else { continue };
        let text: Vec<&str> =
            content.iter().filter_map(|item| item.pointer("/content/text").and_then(Value::as_str)).collect();
        shown_text.insert(id, text.join("\n"));
    }
    for entry in evidence.capture.acp.iter().chain(&evidence.capture.acp_load) {
        let Some(update) = entry.pointer("/message/params/update") else { continue };
        let (Some(id), Some(status)) =
            (update.get("toolCallId").and_then(Value::as_str), update.get("status").and_then(Value::as_str))
        else {
            continue;
        };
        last.insert(id.to_owned(), status.to_owned());
    }
    let mut problems: Vec<Violation> =
        lived(evidence).into_iter().map(|problem| Violation::new(problem).of(REFERENCE)).collect();
    for subagent in &evidence.audit.subagents {
        let Some(status) = subagent.status.filter(|status| status.is_terminal()) else { continue };
        let suffix = format!(":subagent:{}", subagent.subagent_id);
        let shown = last.iter().find(|(id, _)| id.ends_with(&suffix)).map(|(_, shown)| shown.as_str());
        let id = &subagent.subagent_id;
        match (shown, status) {
            (None, _) => {
                let message = format!("ACP never shows {id}, which the Log ends `{status}`");
                problems.push(Violation::new(message).of(REFERENCE));
            }
            (Some("completed"), SubagentStatus::Completed | SubagentStatus::Closed) => {}
            (Some("completed"), _) => {
                problems.push(Violation::new(format!("ACP shows {id} completed, but the Log ends it `{status}`")));
            }
            (Some("failed"), SubagentStatus::Completed) => {
                problems.push(Violation::new(format!("ACP shows {id} failed, but the Log ends it `{status}`")));
            }
            _ => {}
        }
    }
    for result in evidence.lines.iter().filter_map(Line::tool_result) {
        let Some(workflow) = result.workflow else { continue };
        let Some(call_id) = result.call_id else { continue };
        if workflow.get("ok").and_then(Value::as_bool) != Some(true)
            && last.get(call_id).map(String::as_str) == Some("completed")
        {
            problems.push(
                Violation::new(format!(
                    "ACP shows the run_workflow call {call_id} completed, but workflow {} is not ok",
                    workflow.get("workflow_id").and_then(Value::as_str).unwrap_or("?")
                ))
                .of(WORKFLOW),
            );
        }
        let output = result.output.unwrap_or_default();
        match shown_text.get(call_id) {
            Some(text) if text.contains(output) => {}
            shown => problems.push(
                Violation::new(format!(
                    "ACP shows the run_workflow call {call_id} as {shown:?}, not its result's line {output:?}"
                ))
                .of(WORKFLOW),
            ),
        }
    }
    problems
}

/// Each Subagent item's live life: opened once per connection, by a `tool_call`, before any
/// update (a `session/load` after a reconnect replays it to a client that never saw it); and the
/// statuses it shows, in order, follow the Log's lifecycle of that child (`in_progress` while
/// queued or running, then how each terminal event ends it), possibly coalesced: a child shown
/// failed while it ran, or shown an end the Log never reached, is caught.
fn lived(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for subagent in &evidence.audit.subagents {
        let id = &subagent.subagent_id;
        let suffix = format!(":subagent:{id}");
        let mut logged: Vec<&str> = evidence
            .lines
            .iter()
            .filter_map(Line::subagent_event)
            .filter(|event| event.subagent_id == Some(id))
            .filter_map(|event| {
                Some(match event.subagent_status()? {
                    SubagentStatus::Queued | SubagentStatus::Running => "in_progress",
                    SubagentStatus::Completed | SubagentStatus::Closed => "completed",
                    SubagentStatus::Failed
                    | SubagentStatus::Cancelled
                    | SubagentStatus::TimedOut
                    | SubagentStatus::Detached => "failed",
                })
            })
            .collect();
        logged.dedup();
        let mut opened = false;
        // What each connection showed: a replay on a new one may tell the lifecycle again.
        let mut connections: Vec<Vec<&str>> = vec![Vec::new()];
        for entry in &evidence.capture.acp {
            // A new connection's client knows no item yet: `session/load` opens it again.
            if entry.get("from").and_then(Value::as_str) == Some("client")
                && entry.pointer("/message/method").and_then(Value::as_str) == Some("initialize")
            {
                opened = false;
                connections.push(Vec::new());
            }
            let shown_before = connections.iter().any(|shown| !shown.is_empty());
            let Some(shown) = connections.last_mut() else { continue };
            let Some(update) = entry.pointer("/message/params/update") else { continue };
            if !update.get("toolCallId").and_then(Value::as_str).is_some_and(|call| call.ends_with(&suffix)) {
                continue;
            }
            match update.get("sessionUpdate").and_then(Value::as_str) {
                Some(TOOL_CALL_UPDATE) if opened => problems.push(format!("ACP opens the item of {id} a second time")),
                Some(TOOL_CALL_UPDATE) => {
                    opened = true;
                    let status = update.get("status").and_then(Value::as_str).unwrap_or("pending");
                    // Only the first opening shows the child new; a replay shows where it is now.
                    let first = !shown_before;
                    if first && logged.first() == Some(&"in_progress") && !matches!(status, "pending" | "in_progress") {
                        problems.push(format!("ACP opens the item of {id} {status}, but the Log has it queued"));
                    }
                }
                _ if !opened => {
                    problems.push(format!("ACP updates the item of {id} before a tool_call opened it"));
                    opened = true;
                }
                _ => {}
            }
            if let Some(status) = update.get("status").and_then(Value::as_str) {
                shown.push(status);
            }
        }
        for mut shown in connections {
            shown.dedup();
            let mut rest = logged.iter();
            if !shown.iter().all(|status| rest.any(|logged| logged == status)) {
                problems.push(format!(
                    "ACP shows {id} {}, which does not follow its lifecycle in the Log ({})",
                    shown.join(" → "),
                    logged.join(" → ")
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check, entry};
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
                    json!({"call_id": "call_1", "ok": true, "output": "Workflow wf_1 partial: 1 held", "workflow": {"workflow_id": "wf_1", "ok": false}}),
                ),
            ],
            &[],
        );
        capture.acp = vec![update("gauntlet:s:subagent:sub_1", "completed"), update("call_1", "completed")];
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "ACP updates the item of sub_1 before a tool_call opened it",
                "ACP shows sub_1 completed, which does not follow its lifecycle in the Log (failed)",
                "ACP shows sub_1 completed, but the Log ends it `timed_out`",
                "ACP shows the run_workflow call call_1 completed, but workflow wf_1 is not ok",
                "ACP shows the run_workflow call call_1 as None, not its result's line \"Workflow wf_1 partial: 1 held\"",
            ]
        );
    }

    fn opened(id: &str, status: &str) -> Value {
        entry(
            "agent",
            json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": id, "status": status}}}),
        )
    }

    #[test]
    fn an_item_updated_before_it_opens_or_shown_failed_while_running_is_caught() {
        let events = [
            ("subagent_event", json!({"event": "queued", "status": "queued", "subagent_id": "sub_1"})),
            ("subagent_event", json!({"event": "started", "status": "running", "subagent_id": "sub_1"})),
            ("subagent_event", json!({"event": "cancelled", "status": "cancelled", "subagent_id": "sub_1"})),
            ("subagent_event", json!({"event": "closed", "status": "closed", "subagent_id": "sub_1"})),
        ];
        let id = "gauntlet:s:subagent:sub_1";
        let mut capture = capture(&events, &[]);
        // pixir.md 5.1: a cancelled child's item ends failed, and its close shows it completed.
        capture.acp =
            vec![opened(id, "in_progress"), update(id, "in_progress"), update(id, "failed"), update(id, "completed")];
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new());
        capture.acp = vec![opened(id, "failed"), update(id, "failed"), update(id, "failed"), update(id, "completed")];
        assert_eq!(check(INVARIANT, &capture), ["ACP opens the item of sub_1 failed, but the Log has it queued"]);
        capture.acp =
            vec![opened(id, "in_progress"), update(id, "completed"), update(id, "failed"), update(id, "completed")];
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "ACP shows sub_1 in_progress → completed → failed → completed, which does not follow its lifecycle in the Log (in_progress → failed → completed)"
            ]
        );
        capture.acp =
            vec![update(id, "in_progress"), opened(id, "in_progress"), update(id, "failed"), update(id, "completed")];
        assert_eq!(
            check(INVARIANT, &capture),
            ["ACP updates the item of sub_1 before a tool_call opened it", "ACP opens the item of sub_1 a second time"]
        );
        let reconnect = entry("client", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}));
        capture.acp = vec![opened(id, "in_progress"), reconnect.clone(), opened(id, "failed"), update(id, "completed")];
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new(), "a load replays the item to a new client");
        // A load may tell the whole lifecycle again, from its start.
        let live = [opened(id, "in_progress"), update(id, "failed"), update(id, "completed")];
        let replayed = [opened(id, "in_progress"), update(id, "failed")];
        capture.acp = live.into_iter().chain([reconnect]).chain(replayed).collect();
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new(), "a replay on a new connection starts again");
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
                "ACP updates the item of sub_1 before a tool_call opened it",
                "ACP shows sub_1 failed, which does not follow its lifecycle in the Log (completed)",
                "ACP shows sub_1 failed, but the Log ends it `completed`",
                "ACP never shows sub_2, which the Log ends `failed`"
            ]
        );
        // The seed's MUST is the truth of the end; the item's shape is the reference's (issue 31).
        use crate::judge::fixture::check_as;
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &capture),
            ["ACP shows sub_1 failed, but the Log ends it `completed`"]
        );
    }

    /// A `closed` child may never have run: shown either way, it is no finding.
    #[test]
    fn a_closed_child_may_read_either_way() {
        for shown in ["completed", "failed"] {
            let mut capture = capture(
                &[("subagent_event", json!({"event": "closed", "status": "closed", "subagent_id": "sub_1"}))],
                &[],
            );
            capture.acp = vec![update("gauntlet:s:subagent:sub_1", shown)];
            let found = crate::judge::fixture::check_as(INVARIANT, INVARIANT.id, &capture);
            assert_eq!(found, Vec::<String>::new(), "{shown}");
        }
    }
}
