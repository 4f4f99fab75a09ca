//! ACP-VERSION-NEGOTIATION: an agent answers `initialize` with the version the client asked
//! for when it supports it. ACP: "If the Agent supports the requested version, it **MUST**
//! respond with the same version. Otherwise, the Agent **MUST** respond with the latest version
//! it supports." Whether an agent supports the version is read from what it did next: one that
//! answered with another version and then served the client's session in the asked one (it
//! answered `session/new`, `session/load` or `session/resume`; for a client that asked for 2
//! and speaks both, a message only v2 has) supported it all along (acp-tck's negotiation). Read on the transcript as sent and
//! its v1 reading alike: the reading reads only a connection both sides agreed was v2, and
//! keeps every `initialize` as it was.

use serde_json::Value;

use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_transcript;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-VERSION-NEGOTIATION",
    also: &[],
    name: "version_negotiated",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(on_each_transcript(evidence, transcript)),
};

fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    let messages: Vec<(&Value, &Value)> =
        entries.iter().filter_map(|entry| Some((&entry["from"], entry.get("message")?))).collect();
    let request = |method: &str| {
        messages.iter().find(|(from, message)| *from == "client" && message["method"] == method).map(|(_, m)| *m)
    };
    let answer = |request: &Value| {
        messages
            .iter()
            .find(|(from, message)| {
                *from == "agent" && message.get("method").is_none() && message.get("id") == request.get("id")
            })
            .map(|(_, m)| *m)
    };
    let Some(initialize) = request("initialize") else { return Vec::new() };
    let Some(asked) = initialize.pointer("/params/protocolVersion").and_then(Value::as_u64) else { return Vec::new() };
    let Some(answered) = answer(initialize).and_then(|answer| answer.pointer("/result/protocolVersion")) else {
        return Vec::new();
    };
    if answered.as_u64() == Some(asked) {
        return Vec::new();
    }
    let served = if asked >= 2 {
        messages.iter().any(|(from, message)| *from == "agent" && speaks_v2(message))
    } else {
        ["session/new", "session/load", "session/resume"]
            .into_iter()
            .filter_map(|method| request(method).and_then(answer))
            .any(|answer| answer.get("result").is_some())
    };
    if !served {
        return Vec::new();
    }
    vec![format!(
        "{which}: the client asked for protocol version {asked} and the agent answered {answered}, then served the session in version {asked}: it supports the version it was asked for, so it must answer with it"
    )]
}

/// A message only v2 has: a `state_update`, or a prompt acknowledged by its `messageId`. A
/// client that speaks both versions goes on in v1 when answered 1, so a session it was served
/// says nothing of v2; a v2 message does.
fn speaks_v2(message: &Value) -> bool {
    message.pointer("/params/update/sessionUpdate").and_then(Value::as_str) == Some("state_update")
        || message.pointer("/result/messageId").is_some()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry};

    fn negotiated(answered: u64, session: Value) -> Capture {
        let acp = vec![
            entry(
                "client",
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
            ),
            entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": answered}})),
            entry("client", json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}})),
            entry("agent", session),
        ];
        Capture { acp, ..Capture::default() }
    }

    /// Asked for version 1, an agent that answers 2 and then serves the v1 session supported 1
    /// and had to say so; one that answers 2 and refuses the session may support only 2.
    #[test]
    fn an_agent_that_supports_the_asked_version_answers_with_it() {
        let served = json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}});
        let refused = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": "unsupported"}});
        assert!(check(INVARIANT, &negotiated(1, served.clone())).is_empty());
        assert_eq!(check(INVARIANT, &negotiated(2, served)).len(), 1);
        assert!(check(INVARIANT, &negotiated(2, refused)).is_empty());
    }

    /// Asked for 2, an agent that answers 1 and then speaks v2 (its idle state, a prompt
    /// acknowledged by id) supported 2: the same finding; one that goes on in v1 did not.
    #[test]
    fn an_agent_asked_for_2_that_answers_1_then_speaks_2_is_caught() {
        use agent_client_protocol_schema::v2;

        use crate::judge::fixture::prompt;
        use crate::judge::v1_reading::v2_fixture::{connected, one_turn};
        let mut acp = one_turn("q", &["a"], v2::StopReason::EndTurn);
        acp[1]["message"]["result"]["protocolVersion"] = json!(1);
        assert_eq!(
            check(INVARIANT, &Capture { acp, ..Capture::default() }),
            [
                "the live transcript: the client asked for protocol version 2 and the agent answered 1, then served the session in version 2: it supports the version it was asked for, so it must answer with it"
            ]
        );
        let mut v1 = connected();
        v1[1]["message"]["result"]["protocolVersion"] = json!(1);
        v1.extend([
            entry("client", prompt(2, "q")),
            entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
        ]);
        assert!(check(INVARIANT, &Capture { acp: v1, ..Capture::default() }).is_empty());
    }
}
