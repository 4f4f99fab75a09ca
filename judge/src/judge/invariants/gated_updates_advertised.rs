//! ACP-CLIENT-CAPABILITY-UPDATES: an agent sends no `session/update` that needs a client
//! capability its client did not advertise in `initialize`. The schema's `SessionUpdate`, v1:
//! `plan_update` and `plan_removed` ("Agents MUST NOT send this update unless the Client
//! advertised `plan`"), `notice` (`session.notices`), `compaction_update` and
//! `compaction_summary_chunk` (`session.compaction`), `subagent_update`, `session_message` and
//! `session_message_chunk` (`subagents`), each "Agents MUST only send this update when the
//! Client advertised" it; v2: `prompt_suggestions_update` (`session.promptSuggestions`), the
//! one v2 gates (its plans, notices and compactions need no capability). A capability is
//! advertised by a value that is neither absent, `null` nor `false` (`{}` advertises).
//!
//! Read on both transcripts as the agent sent them, each connection against its own version
//! and its own client's `initialize` (gauntlet's client declares nothing unless a scenario's
//! `[client]` says so).

use serde_json::Value;

use crate::judge::transcript::{Connection, connections, update_of};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_raw_transcript;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-CLIENT-CAPABILITY-UPDATES",
    also: &[],
    name: "gated_updates_advertised",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(on_each_raw_transcript(evidence, transcript)),
};

fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    connections(entries).iter().flat_map(|connection| gated(connection, which)).collect()
}

/// The updates of one connection sent without the capability they need.
fn gated(connection: &Connection, which: &str) -> Vec<String> {
    let (declared, gate): (&Value, fn(&str) -> Option<&'static str>) = if connection.v2 {
        (connection.initialize.pointer("/params/capabilities").unwrap_or(&Value::Null), gate_v2)
    } else {
        (connection.initialize.pointer("/params/clientCapabilities").unwrap_or(&Value::Null), gate_v1)
    };
    connection
        .messages()
        .filter(|(_, from, _)| *from == "agent")
        .filter_map(|(number, _, message)| Some((number, update_of(message)?.1)))
        .filter_map(|(number, kind)| Some((number, kind, gate(kind)?)))
        .filter(|(_, _, capability)| !advertised(declared, capability))
        .map(|(number, kind, capability)| {
            let field = if connection.v2 { "capabilities" } else { "clientCapabilities" };
            format!(
                "message {number} of {which} is a `{kind}` update, but the client's initialize did not advertise `{field}{}`",
                capability.replace('/', ".")
            )
        })
        .collect()
}

/// The client capability (a JSON pointer into `clientCapabilities`) a v1 update needs.
fn gate_v1(kind: &str) -> Option<&'static str> {
    match kind {
        "plan_update" | "plan_removed" => Some("/plan"),
        "notice" => Some("/session/notices"),
        "compaction_update" | "compaction_summary_chunk" => Some("/session/compaction"),
        "subagent_update" | "session_message" | "session_message_chunk" => Some("/subagents"),
        "prompt_suggestions_update" => Some("/session/promptSuggestions"),
        "cursor_update" => Some("/session/cursors"),
        _ => None,
    }
}

/// The client capability (a JSON pointer into `capabilities`) a v2 update needs.
fn gate_v2(kind: &str) -> Option<&'static str> {
    (kind == "prompt_suggestions_update").then_some("/session/promptSuggestions")
}

/// Whether `declared` advertises the capability at `pointer`.
fn advertised(declared: &Value, pointer: &str) -> bool {
    declared.pointer(pointer).is_some_and(|value| !value.is_null() && *value != Value::Bool(false))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry};

    /// A v1 connection whose client declared `capabilities`, then one update of `kind`.
    fn sent(capabilities: Value, kind: &str) -> Capture {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": capabilities}});
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}});
        let update = json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": kind}}});
        Capture {
            acp: vec![entry("client", initialize), entry("agent", answer), entry("agent", update)],
            ..Capture::default()
        }
    }

    /// A client without `plan` is sent v1's whole-list `plan`, never `plan_update`; one that
    /// advertised it (`{}`) may be.
    #[test]
    fn an_update_the_client_did_not_advertise_is_never_sent() {
        assert_eq!(
            check(INVARIANT, &sent(json!({}), "plan_update")),
            [
                "message 3 of the live transcript is a `plan_update` update, but the client's initialize did not advertise `clientCapabilities.plan`"
            ]
        );
        assert_eq!(check(INVARIANT, &sent(json!({"session": {"notices": null}}), "notice")).len(), 1);
        assert!(check(INVARIANT, &sent(json!({"plan": {}}), "plan_removed")).is_empty());
        assert!(check(INVARIANT, &sent(json!({}), "plan")).is_empty());
        assert!(check(INVARIANT, &sent(json!({"subagents": {}}), "session_message")).is_empty());
    }
}
