//! ACP-JSONRPC-ERRORS: every message the agent writes is a JSON-RPC 2.0 object, and every error
//! carries an integer code in the range JSON-RPC reserves (-32768 to -32000) and a message.

use serde_json::Value;

use super::{Invariant, Scope};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-JSONRPC-ERRORS", also: &[], name: "jsonrpc_errors_standard", scope: Scope::Run, check };

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
            let code = error.get("code").and_then(Value::as_i64);
            if !code.is_some_and(|code| (-32768..=-32000).contains(&code)) {
                problems.push(format!("an error code outside JSON-RPC's range: {error}"));
            }
            if error.get("message").and_then(Value::as_str).is_none() {
                problems.push(format!("an error without a message: {error}"));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{check, entry};
    use serde_json::json;

    #[test]
    fn an_http_status_as_error_code_is_caught() {
        let capture = Capture {
            acp: vec![entry("agent", json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 500, "message": "boom"}}))],
            ..Capture::default()
        };
        assert_eq!(check(INVARIANT, &capture).len(), 1);
    }
}
