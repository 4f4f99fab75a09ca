//! ACP-JSONRPC-ERRORS: every message the agent writes is a JSON-RPC 2.0 object, and every error
//! carries an integer code and a message (JSON-RPC 2.0 §5.1: "code ... MUST be an integer"; the
//! range -32768 to -32000 is reserved for the codes §5.1 defines, and "the remainder of the
//! space is available for application defined errors", so no integer is wrong by itself).
//! Every raw line the client sent is answered: a line that is not JSON with a Parse error
//! (-32700, `id: null`), a request with its own id (JSON-RPC 2.0 §4, §5.1). The client waits
//! [`QUICK_ANSWER`] for such an answer and goes on without it, so silence is a finding here and
//! never a hang.

use serde_json::Value;

use crate::capture::QUICK_ANSWER;
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-JSONRPC-ERRORS",
    also: &[],
    name: "jsonrpc_errors_standard",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    let mut problems = Vec::new();
    let agent_entries = capture.acp.iter().chain(&capture.acp_load).filter(|entry| entry["from"] == "agent");
    for entry in agent_entries {
        let Some(message) = entry.get("message") else {
            problems.push(format!("the agent wrote a line that is not JSON: {}", entry["raw"]));
            continue;
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            problems.push(format!("a message without `jsonrpc: \"2.0\"`: {message}"));
        }
        if let Some(error) = message.get("error") {
            if !error.get("code").is_some_and(|code| code.is_i64() || code.is_u64()) {
                problems.push(format!("an error whose code is not an integer: {error}"));
            }
            if error.get("message").and_then(Value::as_str).is_none() {
                problems.push(format!("an error without a message: {error}"));
            }
        }
    }
    problems.extend(unanswered_raw_lines(&capture.acp));
    problems
}

/// The raw lines of a transcript that got no proper answer after them.
fn unanswered_raw_lines(transcript: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    // Parse errors answer malformed lines in order: the k-th error with `id: null` after them
    // answers the k-th malformed line still waiting.
    let mut waiting: Vec<&str> = Vec::new();
    for (at, entry) in transcript.iter().enumerate() {
        let from_client = entry["from"] == "client";
        if from_client && let Some(raw) = entry.get("raw").and_then(Value::as_str) {
            match serde_json::from_str::<Value>(raw) {
                Err(_) => waiting.push(raw),
                Ok(request) => {
                    let Some(id) = request.get("id").filter(|_| request.get("method").is_some()) else { continue };
                    let answered = transcript[at + 1..].iter().any(|later| {
                        later["from"] == "agent"
                            && later.pointer("/message/id") == Some(id)
                            && later.get("message").is_some_and(|m| m.get("method").is_none())
                    });
                    if !answered {
                        problems.push(format!(
                            "the request {raw:?} got no answer (the client waited {} ms, then went on)",
                            QUICK_ANSWER.as_millis()
                        ));
                    }
                }
            }
        } else if !from_client
            && let Some(message) = entry.get("message")
            && message.get("id").is_none_or(Value::is_null)
            && let Some(error) = message.get("error")
            && !waiting.is_empty()
        {
            let raw = waiting.remove(0);
            if error.get("code").and_then(Value::as_i64) != Some(-32700) {
                problems.push(format!(
                    "the line {raw:?}, which is not JSON, was answered {error} instead of a Parse error (-32700)"
                ));
            }
            if message.get("id").is_none() {
                problems.push(format!(
                    "the Parse error answering {raw:?} has no `id` member: JSON-RPC 2.0 §5 requires one, null when the id could not be read: {message}"
                ));
            }
        }
    }
    problems.extend(waiting.into_iter().map(|raw| {
        format!(
            "the line {raw:?}, which is not JSON, got no Parse error (-32700 with id null): the client waited {} ms, then went on",
            QUICK_ANSWER.as_millis()
        )
    }));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry};
    use serde_json::json;

    /// JSON-RPC 2.0 leaves every integer outside its reserved range to the application, so an
    /// HTTP status as a code is legal (gemini-cli answers `{"code": 500, "message": "terminated"}`);
    /// a code that is not an integer, or an error without a message, is not.
    #[test]
    fn any_integer_code_with_a_message_passes_and_anything_else_is_caught() {
        let error = |error: Value| Capture {
            acp: vec![entry("agent", json!({"jsonrpc": "2.0", "id": 1, "error": error}))],
            ..Capture::default()
        };
        for legal in [json!({"code": 500, "message": "terminated"}), json!({"code": -32603, "message": "m"})] {
            assert!(check(INVARIANT, &error(legal.clone())).is_empty(), "{legal}");
        }
        assert_eq!(
            check(INVARIANT, &error(json!({"code": "500", "message": "m"}))),
            [r#"an error whose code is not an integer: {"code":"500","message":"m"}"#]
        );
        assert_eq!(check(INVARIANT, &error(json!({"code": 1.5}))).len(), 2);
    }

    #[test]
    fn a_malformed_line_left_unanswered_is_caught() {
        let malformed = json!({"from": "client", "raw": "{\"jsonrpc\":"});
        let unknown = json!({"from": "client", "raw": "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"x/y\"}"});
        let answer = entry("agent", json!({"jsonrpc": "2.0", "id": 99, "error": {"code": -32601, "message": "m"}}));
        let capture = Capture { acp: vec![malformed.clone(), unknown.clone(), answer.clone()], ..Capture::default() };
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "the line \"{\\\"jsonrpc\\\":\", which is not JSON, got no Parse error (-32700 with id null): the client waited 1000 ms, then went on"
            ]
        );
        let parse_error =
            entry("agent", json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}));
        let capture = Capture {
            acp: vec![malformed.clone(), parse_error, unknown.clone(), answer.clone()],
            ..Capture::default()
        };
        assert!(check(INVARIANT, &capture).is_empty());
        let without_id = entry("agent", json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}));
        let capture = Capture { acp: vec![malformed, without_id, unknown, answer], ..Capture::default() };
        let problems = check(INVARIANT, &capture);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("has no `id` member"), "{problems:?}");
    }
}
