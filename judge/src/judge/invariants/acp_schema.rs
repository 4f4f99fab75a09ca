//! ACP-SCHEMA: every message an agent sends is what the protocol's schema says it is. Each
//! notification, each request to the client and each answer to a client's request must
//! deserialize as the official schema crate's type for its method (`agent-client-protocol-schema`,
//! v1's types, or v2's where the connection negotiated protocol version 2), and the finding names the message (its place in the transcript) and the field path that
//! fails, so an agent whose content block carries a wrongly typed field no longer passes because
//! gauntlet reads only the fields it needs (acp-tck's ACP-SCHEMA-001).
//!
//! Each message is then read against the published JSON schema of the same version (vendored,
//! [`crate::published_schema`]), as acp-tck and any client built on it read it: the crate reads
//! many optional fields leniently and drops a wrongly typed one (`"annotations": "none"`), the
//! published schema names it. A field the schema marks lenient for receivers is said so in the
//! finding and held to its type all the same: the leniency is a receiver's, not a sender's.
//!
//! What the schema leaves open is no finding: a method the crate does not know (an extension,
//! `_`-prefixed or not yet in the crate), and an enum value it does not know (`_`-prefixed
//! extensions, or a value from a protocol newer than the crate).

use agent_client_protocol_schema::{v1, v2};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::judge::transcript::negotiates_v2;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_raw_transcript;
use crate::published_schema::{self, Sent};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-SCHEMA",
    also: &[],
    name: "acp_schema",
    applies: Scope::Run,
    // The messages as sent, not their v1 reading: a v2 message is read as v2's type.
    check: |evidence| Violation::unplaced(on_each_raw_transcript(evidence, transcript)),
};

/// The messages of one transcript that break the schema of the version their connection
/// negotiated (its `initialize` answer's `protocolVersion`; that answer is read by its own).
fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    // The client's requests by id (their JSON text), per connection: an answer is read as the
    // response to the method it answers.
    let mut asked: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut initialize = &Value::Null;
    let mut schema = &V1;
    let mut problems = Vec::new();
    for (at, entry) in entries.iter().enumerate() {
        let Some(message) = entry.get("message") else { continue };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").map(Value::to_string);
        if entry.get("from").and_then(Value::as_str) == Some("client") {
            if method == Some("initialize") {
                asked.clear();
                (initialize, schema) = (message, &V1);
            }
            if let (Some(method), Some(id)) = (method, id) {
                asked.insert(id, method.to_owned());
            }
            continue;
        }
        let answers = id.as_ref().and_then(|id| asked.get(id)).map(String::as_str);
        if method.is_none() && answers == Some("initialize") {
            schema = if negotiates_v2(initialize, message) { &V2 } else { &V1 };
        }
        let failure = typed(schema, message, method, id.is_some(), answers)
            .or_else(|| published(schema.published, message, method, answers));
        if let Some((what, why)) = failure {
            problems.push(format!("message {} of {which} ({what}) breaks the ACP schema: {why}", at + 1));
        }
    }
    problems
}

/// The message read as the schema crate's type for what it is.
fn typed(
    schema: &Schema,
    message: &Value,
    method: Option<&str>,
    has_id: bool,
    answers: Option<&str>,
) -> Option<(String, String)> {
    match (method, has_id) {
        (Some(method), true) => agent_request(schema, method, message.get("params")),
        (Some(method), false) => notification(schema, method, message.get("params")),
        (None, true) => match (message.get("result"), message.get("error")) {
            (Some(result), _) => answers.and_then(|method| response(schema, method, result)),
            (None, Some(error)) => (schema.error)(error).map(|why| ("the error".to_owned(), why)),
            (None, None) => None,
        },
        (None, false) => None,
    }
}

/// The message read against the published JSON schema, as a client built on it reads it: what
/// the crate's lenient reading lets through (a wrongly typed optional field it drops).
fn published(
    version: published_schema::Version,
    message: &Value,
    method: Option<&str>,
    answers: Option<&str>,
) -> Option<(String, String)> {
    let (what, sent, value) = match (method, message.get("result"), message.get("error")) {
        (Some(method), ..) => (format!("`{method}`"), Sent::Call(method), message.get("params")?),
        (None, Some(result), _) => (format!("the answer to `{}`", answers?), Sent::Answer(answers?), result),
        (None, None, Some(error)) => ("the error".to_owned(), Sent::Error, error),
        (None, None, None) => return None,
    };
    let breach = published_schema::breach(version, sent, value)?;
    Some((what, breach.to_string()))
}

/// One protocol version's types, each as a reading: why a value is not that type, if it is
/// not; `None` for a method or kind the version's schema does not type.
struct Schema {
    /// The `session/update` notification.
    notification: fn(&Value) -> Option<String>,
    /// An update by its `sessionUpdate` kind: serde reads an internally tagged enum whole, so
    /// its error stops at `update`; read again as its kind's own type, the path goes down to
    /// the field.
    update: fn(&str, &Value) -> Option<String>,
    /// A request of the agent's to the client, by method.
    request: fn(&str, &Value) -> Option<String>,
    /// The agent's answer to the client's method.
    response: fn(&str, &Value) -> Option<String>,
    /// A JSON-RPC error.
    error: fn(&Value) -> Option<String>,
    /// The same version's published JSON schema.
    published: published_schema::Version,
}

const V1: Schema = Schema {
    notification: read::<v1::SessionNotification>,
    update: |kind, update| match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => read::<v1::ContentChunk>(update),
        "tool_call" => read::<v1::ToolCall>(update), // ACP's update kind, not a Log type
        "tool_call_update" => read::<v1::ToolCallUpdate>(update),
        "plan" => read::<v1::Plan>(update),
        _ => None,
    },
    request: |method, params| match method {
        "session/request_permission" => read::<v1::RequestPermissionRequest>(params),
        "fs/read_text_file" => read::<v1::ReadTextFileRequest>(params),
        "fs/write_text_file" => read::<v1::WriteTextFileRequest>(params),
        "terminal/create" => read::<v1::CreateTerminalRequest>(params),
        _ => None,
    },
    response: |method, result| match method {
        "initialize" => read::<v1::InitializeResponse>(result),
        "session/new" => read::<v1::NewSessionResponse>(result),
        "session/load" => read::<v1::LoadSessionResponse>(result),
        "session/prompt" => read::<v1::PromptResponse>(result),
        "session/set_config_option" => read::<v1::SetSessionConfigOptionResponse>(result),
        _ => None,
    },
    error: read::<v1::Error>,
    published: published_schema::Version::V1,
};

/// v2 as the crate's `unstable_protocol_v2` types have it (where the Preview and the crate
/// differ, the crate). v2 has no client fs or terminal methods, and no `session/load`.
const V2: Schema = Schema {
    notification: read::<v2::UpdateSessionNotification>,
    update: |kind, update| match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => read::<v2::ContentChunk>(update),
        "user_message" => read::<v2::UserMessage>(update), // ACP's update kind, not a Log type
        "agent_message" => read::<v2::AgentMessage>(update),
        "agent_thought" => read::<v2::AgentThought>(update),
        "state_update" => read::<v2::StateUpdate>(update),
        "tool_call_update" => read::<v2::ToolCallUpdate>(update),
        "tool_call_content_chunk" => read::<v2::ToolCallContentChunk>(update),
        "plan_update" => read::<v2::PlanUpdate>(update),
        "usage_update" => read::<v2::UsageUpdate>(update),
        _ => None,
    },
    request: |method, params| match method {
        "session/request_permission" => read::<v2::RequestPermissionRequest>(params),
        "elicitation/create" => read::<v2::CreateElicitationRequest>(params),
        _ => None,
    },
    response: |method, result| match method {
        "initialize" => read::<v2::InitializeResponse>(result),
        "session/new" => read::<v2::NewSessionResponse>(result),
        "session/resume" => read::<v2::ResumeSessionResponse>(result),
        "session/prompt" => read::<v2::PromptResponse>(result),
        "session/close" => read::<v2::CloseSessionResponse>(result),
        "session/list" => read::<v2::ListSessionsResponse>(result),
        "session/set_config_option" => read::<v2::SetSessionConfigOptionResponse>(result),
        _ => None,
    },
    error: read::<v2::Error>,
    published: published_schema::Version::V2,
};

/// A notification of the agent's, read as its method's type.
fn notification(schema: &Schema, method: &str, params: Option<&Value>) -> Option<(String, String)> {
    let why = match method {
        "session/update" => (schema.notification)(params?).map(|why| deeper(schema, params, why)),
        _ => None,
    }?;
    Some((format!("`{method}`"), why))
}

/// The path of a failing update, down to its field when its kind's own type names it.
fn deeper(schema: &Schema, params: Option<&Value>, why: String) -> String {
    let Some(update) = params.and_then(|params| params.get("update")) else { return why };
    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
    (schema.update)(kind, update).map_or(why, |inner| match inner.strip_prefix("at `") {
        Some(rest) => format!("at `update.{rest}"),
        None => format!("at `update`: {inner}"),
    })
}

/// A request of the agent's to the client, read as its method's type.
fn agent_request(schema: &Schema, method: &str, params: Option<&Value>) -> Option<(String, String)> {
    let why = (schema.request)(method, params?)?;
    Some((format!("a `{method}` request"), why))
}

/// The agent's answer to the client's `method`, read as that method's response type.
fn response(schema: &Schema, method: &str, result: &Value) -> Option<(String, String)> {
    let why = (schema.response)(method, result)?;
    Some((format!("the answer to `{method}`"), why))
}

/// Why `value` is not a `T`, with the path of the field that fails; `None` when it is one, or
/// when all that fails is an enum value the schema does not know (an extension, or newer).
fn read<T: DeserializeOwned>(value: &Value) -> Option<String> {
    let error = serde_path_to_error::deserialize::<_, T>(value).err()?;
    let inner = error.inner().to_string();
    if inner.starts_with("unknown variant") {
        return None;
    }
    let path = error.path().to_string();
    Some(if path == "." { inner } else { format!("at `{path}`: {inner}") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, chunk, entry, prompt};
    use serde_json::json;

    fn transcript(agent: Vec<Value>) -> Capture {
        let mut acp = vec![entry("client", prompt(1, "p"))];
        acp.extend(agent.into_iter().map(|message| entry("agent", message)));
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn well_formed_messages_pass() {
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}});
        assert!(check(INVARIANT, &transcript(vec![chunk("agent_message_chunk", "hi"), answer])).is_empty());
    }

    /// On a connection that negotiated v2, each message is read as v2's type: a wrongly typed
    /// field of an update is named with its path (v2's content block keeps unknown block types,
    /// so serde names the block, not its field), a prompt answered in v1's shape lacks v2's
    /// `messageId`, and a `_`-prefixed state is an extension. A clean v2 turn passes.
    #[test]
    fn a_v2_message_is_read_as_v2s_type() {
        use agent_client_protocol_schema::v2;

        use crate::judge::v1_reading::v2_fixture::one_turn;
        let played = |edit: &dyn Fn(&mut Vec<Value>)| {
            let mut acp = one_turn("q", &["hi"], v2::StopReason::EndTurn);
            edit(&mut acp);
            check(INVARIANT, &Capture { acp, ..Capture::default() })
        };
        assert_eq!(played(&|_| {}), Vec::<String>::new());
        let wrongly_typed = played(&|acp| acp[8]["message"]["params"]["update"]["content"]["text"] = json!(42));
        assert_eq!(
            wrongly_typed,
            [
                "message 9 of the live transcript (`session/update`) breaks the ACP schema: at `update.content`: data did not match any variant of untagged enum ContentBlock"
            ]
        );
        let v1_answer = played(&|acp| acp[6]["message"]["result"] = json!({"stopReason": "end_turn"}));
        assert_eq!(
            v1_answer,
            [
                "message 7 of the live transcript (the answer to `session/prompt`) breaks the ACP schema: missing field `messageId`"
            ]
        );
        assert_eq!(
            played(&|acp| acp[7]["message"]["params"]["update"]["state"] = json!("_paused")),
            Vec::<String>::new()
        );
    }

    /// A wrongly typed field of a notification, a response and a request to the client are
    /// each a finding with the message and the field path (issue 32).
    #[test]
    fn a_wrongly_typed_field_is_named_with_its_path() {
        let mut update = chunk("agent_message_chunk", "hi");
        update["params"]["update"]["content"]["text"] = json!(42);
        let found = check(INVARIANT, &transcript(vec![update]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("message 2 of the live transcript (`session/update`) breaks the ACP schema"),
            "{found:?}"
        );
        assert!(found[0].contains("update.content"), "{found:?}");

        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": 7}});
        let found = check(INVARIANT, &transcript(vec![answer]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("the answer to `session/prompt`"), "{found:?}");
        assert!(found[0].contains("stopReason"), "{found:?}");

        let permission = json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
            "params": {"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": "allow"}});
        let found = check(INVARIANT, &transcript(vec![permission]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a `session/request_permission` request") && found[0].contains("options"),
            "{found:?}"
        );
    }

    /// acp-tck's case: a text block whose `annotations` is `"none"` deserializes as the crate's
    /// type, which drops it, and still breaks the published schema: a finding naming the
    /// message and the field, in both versions (issue 44).
    #[test]
    fn a_field_the_crate_drops_breaks_the_published_schema() {
        let mut update = chunk("agent_message_chunk", "hi");
        update["params"]["update"]["content"]["annotations"] = json!("none");
        let found = check(INVARIANT, &transcript(vec![update]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(
                "message 2 of the live transcript (`session/update`) breaks the ACP schema: at `update.content.annotations`: \"none\" is not of type \"object\""
            ),
            "{found:?}"
        );
        assert!(found[0].contains("x-deserialize-default-on-error"), "{found:?}");

        use crate::judge::v1_reading::v2_fixture::one_turn;
        let mut acp = one_turn("q", &["hi"], agent_client_protocol_schema::v2::StopReason::EndTurn);
        acp[8]["message"]["params"]["update"]["content"]["annotations"] = json!("none");
        let found = check(INVARIANT, &Capture { acp, ..Capture::default() });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("at `update.content.annotations`"), "{found:?}");
    }

    /// An extension method, and an update kind the schema does not know, are no finding.
    #[test]
    fn extensions_and_unknown_values_pass() {
        let extension = json!({"jsonrpc": "2.0", "method": "_zed/status", "params": {"anything": [1, 2]}});
        let mut newer = chunk("agent_message_chunk", "hi");
        newer["params"]["update"]["sessionUpdate"] = json!("_my_update");
        assert_eq!(check(INVARIANT, &transcript(vec![extension, newer])), Vec::<String>::new());
    }
}
