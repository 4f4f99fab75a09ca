//! ACP-CLIENT-CAPABILITIES: an agent calls no client method the client did not declare. ACP:
//! "If `readTextFile` or `writeTextFile` is `false` or not present, the Agent **MUST NOT**
//! attempt to call the corresponding filesystem method", and "If `terminal` is `false` or not
//! present, the Agent **MUST NOT** attempt to call any terminal methods". The capabilities are
//! read from the client's own `initialize` in each transcript (gauntlet's client declares none),
//! and every request the agent sends back is held to them (acp-tck's capability negatives).

use serde_json::Value;

use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_transcript;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-CLIENT-CAPABILITIES",
    also: &[],
    name: "client_capabilities_respected",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(on_each_transcript(evidence, transcript)),
};

/// The agent's requests in one transcript that call a method its client did not declare.
fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    let mut declared = &Value::Null;
    let mut problems = Vec::new();
    for (at, entry) in entries.iter().enumerate() {
        let Some(message) = entry.get("message") else { continue };
        let method = message.get("method").and_then(Value::as_str);
        if entry["from"] == "client" {
            if method == Some("initialize") {
                declared = message.pointer("/params/clientCapabilities").unwrap_or(&Value::Null);
            }
            continue;
        }
        // Only a request calls a method: it has an id as well as a method.
        let (Some(method), Some(_)) = (method, message.get("id")) else { continue };
        let Some(capability) = capability_of(method) else { continue };
        if declared.pointer(capability) != Some(&Value::Bool(true)) {
            problems.push(format!(
                "message {} of {which} calls `{method}`, but the client's initialize did not declare `clientCapabilities{}`",
                at + 1,
                capability.replace('/', ".")
            ));
        }
    }
    problems
}

/// The client capability (a JSON pointer into `clientCapabilities`) a client method needs.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "fs/read_text_file" => Some("/fs/readTextFile"),
        "fs/write_text_file" => Some("/fs/writeTextFile"),
        _ if method.starts_with("terminal/") => Some("/terminal"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry};

    fn asked(capabilities: Value, method: &str) -> Capture {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": capabilities}});
        let call =
            json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"sessionId": "s", "path": "/w/a.txt"}});
        Capture { acp: vec![entry("client", initialize), entry("agent", call)], ..Capture::default() }
    }

    /// gauntlet's client declares no capability: an agent that reads a file through it, or
    /// opens a terminal, calls what it was told is not there; one declared may be called.
    #[test]
    fn a_client_method_the_client_did_not_declare_is_never_called() {
        assert_eq!(
            check(INVARIANT, &asked(json!({}), "fs/read_text_file")),
            [
                "message 2 of the live transcript calls `fs/read_text_file`, but the client's initialize did not declare `clientCapabilities.fs.readTextFile`"
            ]
        );
        assert_eq!(check(INVARIANT, &asked(json!({"terminal": false}), "terminal/create")).len(), 1);
        assert!(check(INVARIANT, &asked(json!({"fs": {"readTextFile": true}}), "fs/read_text_file")).is_empty());
        assert!(check(INVARIANT, &asked(json!({}), "session/request_permission")).is_empty());
    }
}
