//! REPLAY-TOOL-PAIRING: in every request, each `function_call` has exactly one
//! `function_call_output` after it, each output has its call, and no call id is empty.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Invariant, Scope, input_items};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-TOOL-PAIRING", also: &[], name: "tool_calls_paired", scope: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for (request_idx, request) in evidence.capture.requests.iter().enumerate() {
        let n = request_idx + 1;
        // call_id -> outputs seen so far
        let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
        for item in input_items(&request.body) {
            let call_id = item.get("call_id").and_then(Value::as_str);
            match item.get("type").and_then(Value::as_str) {
                Some("function_call") => match call_id {
                    Some(id) if !id.is_empty() => {
                        calls.insert(id, 0);
                    }
                    _ => problems.push(format!("request {n} has a function_call without a call_id")),
                },
                Some("function_call_output") => match call_id.and_then(|id| calls.get_mut(id)) {
                    Some(count) => *count += 1,
                    None => problems.push(format!("request {n} has an output for unknown call {call_id:?}")),
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
