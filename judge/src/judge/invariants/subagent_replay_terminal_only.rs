//! SUB-REPLAY-TERMINAL-ONLY: lifecycle events that are not terminal never reach the parent's
//! Provider input (seed 000: "selected terminal `subagent_event` context"; a fact that is only
//! diagnostic "must stay out of replay"). Read in the reference's line, `Subagent <id> (<agent>)
//! <status>: <summary>` (pixir.md 3.2), so another runtime's shape is not found. That a
//! terminal one recorded while a tool call was pending stays out too is Pixir's quirk (pixir.md
//! 11.4: SUB-REF-DETAILS, a MAY). And no child's partial assistant text reaches any request
//! but its own child's (REPLAY-NO-PARTIAL).

use std::collections::BTreeSet;

use gauntlet_agent::EventType;
use gauntlet_mock_provider::Message;

use crate::audit::subagents::is_replayed_event;
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::judge_messages;

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-REPLAY-TERMINAL-ONLY",
    also: &["REPLAY-NO-PARTIAL", REFERENCE],
    name: "subagent_replay_terminal_only",
    applies: Scope::Replay,
    check,
};

/// What a terminal summary replayed while a tool call was pending breaks.
const REFERENCE: &str = "SUB-REF-DETAILS";

fn check(evidence: &Evidence) -> Vec<Violation> {
    // The summary lines a request may carry, and the ones it must not.
    let mut allowed = BTreeSet::new();
    let mut forbidden = Vec::new();
    let mut pending: BTreeSet<&str> = BTreeSet::new();
    for line in &evidence.lines {
        match line.kind.known() {
            Some(EventType::ToolCall) => {
                pending.insert(line.call_id().unwrap_or_default());
            }
            Some(EventType::ToolResult) => {
                pending.remove(line.call_id().unwrap_or_default());
            }
            Some(EventType::SubagentEvent) => {
                let Some(event) = line.subagent_event() else { continue };
                let rendered = format!(
                    "Subagent {} ({}) {}: {}",
                    event.subagent_id.unwrap_or_default(),
                    event.agent.unwrap_or("default"),
                    event.status.unwrap_or_default(),
                    event.summary.unwrap_or_default()
                );
                if is_replayed_event(line) && pending.is_empty() {
                    allowed.insert(rendered);
                } else {
                    let quirk = is_replayed_event(line);
                    let why = if quirk { "recorded while a tool call was pending" } else { "not terminal" };
                    forbidden.push((line.seq.unwrap_or_default(), rendered, why, quirk));
                }
            }
            Some(EventType::UserMessage | EventType::AssistantMessage | EventType::Reasoning) => pending.clear(),
            _ => {}
        }
    }
    let partials: Vec<(String, String)> = evidence
        .capture
        .child_lines()
        .into_iter()
        .filter_map(|(child, line)| {
            let message = line.assistant_message().filter(|message| message.partial)?;
            Some((child, message.text?.to_owned()))
        })
        .filter(|(_, text)| !text.is_empty())
        .collect();
    judge_messages(evidence, |_, request, message, found| {
        let (Message::User { text } | Message::Assistant { text }) = message else { return };
        for (seq, rendered, why, quirk) in &forbidden {
            if text == rendered && !allowed.contains(text) {
                let violation = Violation::new(format!(
                    "({}) carries the subagent_event at seq {seq}, which is {why}: {rendered:?}",
                    request.route
                ));
                found.push(if *quirk { violation.of(REFERENCE) } else { violation });
            }
        }
        for (child, partial) in &partials {
            if request.route != *child && text.contains(partial.as_str()) {
                found.push(Violation::new(format!(
                    "({}) carries the partial text of child {child}: {partial:?}",
                    request.route
                )));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, capture, check, user};
    use serde_json::json;

    /// Pixir leaves out a summary recorded while a call is pending (a quirk, pixir.md 11.4):
    /// carrying it is a difference from the reference, never the seed's MUST (issue 31).
    #[test]
    fn a_summary_recorded_during_a_pending_call_is_left_out_by_the_reference() {
        let events = [
            ("user_message", json!({"text": "go"})),
            ("tool_call", json!({"call_id": "c1", "name": "wait_agent", "args": {}})),
            (
                "subagent_event",
                json!({"event": "finished", "status": "completed", "subagent_id": "sub_1", "agent": "worker", "summary": "done"}),
            ),
            ("tool_result", json!({"call_id": "c1", "ok": true, "output": "x"})),
        ];
        let clean = capture(&events, &[body(vec![user("go")])]);
        assert!(check(INVARIANT, &clean).is_empty());
        let leaky = capture(&events, &[body(vec![user("go"), user("Subagent sub_1 (worker) completed: done")])]);
        assert_eq!(
            check(INVARIANT, &leaky),
            [
                "request 1 (root) carries the subagent_event at seq 2, which is recorded while a tool call was pending: \"Subagent sub_1 (worker) completed: done\""
            ]
        );
        assert!(crate::judge::fixture::check_as(INVARIANT, INVARIANT.id, &leaky).is_empty());
    }

    #[test]
    fn a_child_partial_text_in_the_parent_request_is_caught() {
        let mut capture = capture(&[("user_message", json!({"text": "go"}))], &[body(vec![user("go: Half an ans")])]);
        capture.children.insert(
            "sub_1".into(),
            vec![r#"{"data":{"text":"Half an ans","metadata":{"partial":true}},"id":"1","seq":0,"session_id":"sub_1","ts":"t","type":"assistant_message"}"#.into()],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            ["request 1 (root) carries the partial text of child sub_1: \"Half an ans\""]
        );
    }
}
