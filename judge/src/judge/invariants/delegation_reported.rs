//! SUB-ACP-ITEM, for an agent without a gauntlet Log that delegates through its own tool (the
//! profile's `[tools.delegate]`): the call of a child that did not complete never ends
//! `completed` in ACP. The child's fate is the script's: a child whose stream the mock faulted
//! ended as its `[children.<route>] expect` says; the item's status is what the agent sent.
//!
//! Also SUB-WAIT-OUTCOME: the result the parent's model is told never passes a child's partial
//! text off as its answer: a result that carries the text the child streamed before its fault
//! and reads as a success through the mapping ("a parent wait must not report success merely
//! because a child exists", seed 000).
//!
//! For an agent that keeps the Log, the child's fate is the Log's: a `delegate` call whose child
//! (the child Session prompted with the call's prompt) ended other than `completed`, by its
//! `subagent_event`s, is neither a success in its `tool_result` nor `completed` in ACP: the
//! timed-out child shown as done.

use std::collections::BTreeMap;

use gauntlet_agent::event::SubagentStatus;
use gauntlet_mock_provider::Response;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::log_line::Line;
use crate::scenario::ChildScript;
use crate::tool_map::AbstractTool;

const WAIT: &str = "SUB-WAIT-OUTCOME";

pub const INVARIANT: Invariant =
    Invariant { id: "SUB-ACP-ITEM", also: &[WAIT], name: "delegation_reported", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if !evidence.capture.log.is_empty() {
        return logged(evidence);
    }
    let mut problems = Vec::new();
    for result in evidence.mapped_results().into_iter().filter(|result| result.call.tool == AbstractTool::Delegate) {
        let prompt = result.call.args.get("prompt").and_then(Value::as_str).unwrap_or_default();
        let Some(child) = scenario.children.values().find(|child| child.prompt.as_deref() == Some(prompt)) else {
            continue;
        };
        // Only a fault the mock served is the child's certain fate; a stall past a timeout is the
        // agent's own (an agent without a child timeout sees the child complete late).
        if !child.respond.iter().any(Response::fails) {
            continue;
        }
        let Some(ended) = child.expect.filter(|status| *status != SubagentStatus::Completed) else { continue };
        let (id, name) = (&result.call_id, &result.call.name);
        if last_status(evidence, id) == Some("completed") {
            problems.push(Violation::new(format!(
                "the delegation `{id}` (`delegate` as `{name}`) ends `completed` in ACP, but its child ended `{ended}`"
            )));
        }
        let partial = partial_text(child);
        if result.outcome.ok && !partial.is_empty() && result.output.contains(&partial) {
            problems.push(
                Violation::new(format!(
                    "the delegation `{id}` (`delegate` as `{name}`) tells the model its child's partial text {partial:?} as a result that {}, but the child ended `{ended}`",
                    if result.call.mcp { "succeeded" } else { "reads as a success through the profile's mapping" }
                ))
                .of(WAIT),
            );
        }
    }
    problems
}

/// [`check`] for an agent that keeps the Log, each `delegate` call against how its child ended.
fn logged(evidence: &Evidence) -> Vec<Violation> {
    let children = prompted_children(evidence);
    let delegations = evidence.lines.iter().filter_map(Line::tool_call);
    let failed = |status: &SubagentStatus| status.is_terminal() && *status != SubagentStatus::Completed;
    let mut problems = Vec::new();
    for call in delegations.filter(|call| call.name == Some(AbstractTool::Delegate.as_str())) {
        let prompt = call.args.and_then(|args| args.get("prompt")?.as_str());
        let (Some(id), Some(prompt)) = (call.call_id, prompt) else { continue };
        let fate = children.get(prompt).and_then(|session| child_fate(evidence, session));
        let Some(ended) = fate.filter(failed) else { continue };
        let results = evidence.lines.iter().filter_map(Line::tool_result);
        if results.filter(|result| result.call_id == Some(id)).any(|result| result.ok == Some(true)) {
            let message =
                format!("the delegation `{id}` is a success (`ok: true`) to the model, but its child ended `{ended}`");
            problems.push(Violation::new(message).of(WAIT));
        }
        if last_status(evidence, id) == Some("completed") {
            let message = format!("the delegation `{id}` ends `completed` in ACP, but its child ended `{ended}`");
            problems.push(Violation::new(message));
        }
    }
    problems
}

/// Each child Session by the prompt that opened it (the first `user_message` of its Log); of
/// two opened alike, the first.
fn prompted_children(evidence: &Evidence) -> BTreeMap<String, String> {
    let mut opened: BTreeMap<String, String> = BTreeMap::new();
    for (session, line) in evidence.capture.child_lines() {
        if let Some(text) = line.user_message().and_then(|message| message.text) {
            opened.entry(session).or_insert_with(|| text.to_owned());
        }
    }
    let mut children = BTreeMap::new();
    for (session, prompt) in opened {
        children.entry(prompt).or_insert(session);
    }
    children
}

/// How child Session `session` ended, by the parent's `subagent_event`s: `completed` once it
/// completed (a close after does not undo it), else its last status.
fn child_fate(evidence: &Evidence, session: &str) -> Option<SubagentStatus> {
    let events = evidence.lines.iter().filter_map(Line::subagent_event);
    let statuses: Vec<SubagentStatus> = events
        .filter(|event| event.child_session_id == Some(session))
        .filter_map(|event| event.subagent_status())
        .collect();
    if statuses.contains(&SubagentStatus::Completed) {
        Some(SubagentStatus::Completed)
    } else {
        statuses.last().copied()
    }
}

/// The last status the live transcript gives the tool item of call `id`.
fn last_status<'e>(evidence: &'e Evidence, id: &str) -> Option<&'e str> {
    evidence
        .capture
        .acp
        .iter()
        .rev()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| update.get("toolCallId").and_then(Value::as_str) == Some(id))
        .find_map(|update| update.get("status").and_then(Value::as_str))
}

/// The text a child streamed in responses that then failed: what it said before its fault.
fn partial_text(child: &ChildScript) -> String {
    child
        .respond
        .iter()
        .filter(|response| response.fails())
        .flat_map(|response| response.text.iter())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{check_played_as, entry};

    /// An agent that keeps the Log and reports a delegation whose child timed out as a success,
    /// to the model and in ACP, is caught on both counts; a child that completed, then was
    /// closed, completed.
    #[test]
    fn a_timed_out_child_reported_done_in_the_log_is_caught() {
        let scenario = crate::judge::fixture::scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"q\"\nrespond = [{ text = [\"x\"] }]\n",
        );
        let run = |statuses: &[&str], ok: bool| {
            let mut events =
                vec![("tool_call", json!({"call_id": "c1", "name": "delegate", "args": {"prompt": "Audit"}}))];
            events.extend(statuses.iter().map(|status| {
                ("subagent_event", json!({"subagent_id": "s1", "child_session_id": "sub_1", "status": status}))
            }));
            events.push(("tool_result", json!({"call_id": "c1", "ok": ok, "output": "done"})));
            let mut capture = crate::judge::fixture::capture(&events, &[]);
            let prompted = json!({"type": "user_message", "seq": 0, "data": {"text": "Audit"}});
            capture.children.insert("sub_1".into(), vec![prompted.to_string()]);
            let update = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"});
            let params = json!({"sessionId": "s", "update": update});
            capture.acp = vec![entry("agent", json!({"jsonrpc": "2.0", "method": "session/update", "params": params}))];
            let mut found = check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario);
            found.extend(check_played_as(INVARIANT, WAIT, &capture, &scenario));
            found
        };
        assert_eq!(
            run(&["running", "timed_out"], true),
            [
                "the delegation `c1` ends `completed` in ACP, but its child ended `timed_out`",
                "the delegation `c1` is a success (`ok: true`) to the model, but its child ended `timed_out`",
            ]
        );
        assert!(run(&["running", "completed", "closed"], true).is_empty());
        assert!(run(&["running"], true).is_empty(), "a child still running has not ended");
    }

    /// An agent that hands its model a failed child's partial text as a result and shows the
    /// delegation `completed` is caught on both counts; shown `failed`, with a failure
    /// marker, it is not.
    #[test]
    fn a_failed_child_reported_as_a_success_is_caught() {
        let scenario = crate::scenario::parse(
            r#"title = "t"
[[turn]]
prompt = "q"
respond = [{ calls = [{ name = "delegate", args = { prompt = "Summarise" } }] }, { text = ["x"] }]
[children.summary]
prompt = "Summarise"
expect = "failed"
respond = [{ text = ["Version 2 ", "adds"], then = { error = "server_error" } }]
"#,
            std::path::Path::new("t.toml"),
        )
        .unwrap_or_else(|error| panic!("{error}"));
        let mut scenario = scenario;
        let mapping: crate::tool_map::ToolMapping = toml::from_str(
            "name = \"Task\"\nargs = { prompt = \"{prompt}\", description = \"{description}\" }\nfailed = [\"<tool_use_error>\"]\n",
        )
        .unwrap_or_else(|error| panic!("{error}"));
        scenario.tools.insert(AbstractTool::Delegate, mapping);
        let run = |output: &str, status: &str| {
            let rendered = json!({"prompt": "Summarise", "description": "Summarise"});
            let input = vec![
                json!({"role": "user", "content": "q"}),
                json!({"type": "function_call", "call_id": "c1", "name": "Task", "arguments": rendered.to_string()}),
                json!({"type": "function_call_output", "call_id": "c1", "output": output}),
            ];
            let mut capture = crate::judge::fixture::capture(
                &[],
                &[json!({"input": [{"role": "user", "content": "q"}]}), json!({"input": input})],
            );
            capture.log.clear();
            capture.acp = vec![entry(
                "agent",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "c1", "status": status}}}),
            )];
            capture.mapped_calls = vec![crate::tool_map::MappedCall {
                tool: AbstractTool::Delegate,
                args: json!({"prompt": "Summarise"}),
                name: "Task".into(),
                rendered,
                mcp: false,
            }];
            let mut found = check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario);
            found.extend(check_played_as(INVARIANT, WAIT, &capture, &scenario));
            found
        };
        assert_eq!(
            run("Version 2 adds", "completed"),
            [
                "the delegation `c1` (`delegate` as `Task`) ends `completed` in ACP, but its child ended `failed`",
                "the delegation `c1` (`delegate` as `Task`) tells the model its child's partial text \"Version 2 adds\" as a result that reads as a success through the profile's mapping, but the child ended `failed`",
            ]
        );
        assert!(run("<tool_use_error>the child failed: Version 2 adds</tool_use_error>", "failed").is_empty());
    }
}
