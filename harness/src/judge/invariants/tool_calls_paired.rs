//! REPLAY-TOOL-PAIRING: in every request, each tool call (`function_call`, an assistant
//! `tool_calls` entry, ...) has exactly one result after it, each result has its call, and no
//! call id is empty, read in any dialect as a [`Conversation`](gauntlet_mock_provider::Conversation).

use std::collections::BTreeMap;

use gauntlet_mock_provider::Message;

use super::{Invariant, Scope, read_requests};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-TOOL-PAIRING", also: &[], name: "tool_calls_paired", scope: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for (request_idx, (_, conversation)) in read_requests(evidence).enumerate() {
        let n = request_idx + 1;
        // call_id -> outputs seen so far
        let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
        for message in conversation.messages {
            match message {
                Message::ToolCall { call_id, .. } if !call_id.is_empty() => {
                    calls.insert(call_id, 0);
                }
                Message::ToolCall { .. } => problems.push(format!("request {n} has a function_call without a call_id")),
                Message::ToolResult { call_id, .. } => match calls.get_mut(call_id.as_str()) {
                    Some(count) => *count += 1,
                    None => problems.push(format!("request {n} has an output for unknown call {:?}", Some(call_id))),
                },
                _ => {}
            }
        }
        for (id, count) in calls {
            if count != 1 {
                problems.push(format!("request {n}: call `{id}` has {count} outputs, expected 1"));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{body, capture, check};
    use serde_json::json;

    #[test]
    fn an_unanswered_call_is_caught() {
        let call = json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"});
        let capture = capture(&[], &[body(vec![call])]);
        assert_eq!(check(INVARIANT, &capture), ["request 1: call `c1` has 0 outputs, expected 1"]);
    }
}
