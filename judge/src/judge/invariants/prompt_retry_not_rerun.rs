//! ACP-PROMPT-IDEMPOTENT: in ACP v2, a prompt retried with the `idempotencyKey` of one the agent
//! already inserted is not run again: it is answered with the first one's `messageId`, and no
//! other user message of its Session is inserted before the client's next prompt there; a key
//! that is no string of 1 to 255 characters is refused with -32602. The schema
//! (`PromptRequest.idempotencyKey`): "Agents that advertise `capabilities.session` MUST support
//! the key. A retry of a recorded insertion returns the original `messageId` without inserting
//! another message", "The Agent MUST recognize the key for as long as it retains the message,
//! including across connections and Agent restarts", and "Agents MUST reject any other value
//! with `-32602` (Invalid params) and MUST NOT treat it as omitted".
//!
//! Read on the live transcript as the agent sent it, across its connections (a key outlives
//! one), judging the v2 connections whose agent advertised `capabilities.session`.

use std::collections::HashMap;

use serde_json::Value;

use crate::judge::transcript::{Connection, connections, update_of};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_raw_transcript;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-PROMPT-IDEMPOTENT",
    also: &[],
    name: "prompt_retry_not_rerun",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(on_each_raw_transcript(evidence, transcript)),
};

/// v2's user message upsert.
const USER_MESSAGE: &str = "user_message"; // ACP's update kind, not a Log type

/// The longest key, in characters.
const MAX_KEY: usize = 255;

fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    let mut inserted = Inserted::default();
    let mut problems = Vec::new();
    for connection in connections(entries).iter().filter(|connection| connection.v2 && takes_keys(connection)) {
        problems.extend(inserted.judge(connection).into_iter().map(|problem| format!("{which}: {problem}")));
    }
    problems
}

/// The agent advertised `capabilities.session`, which binds it to the key.
fn takes_keys(connection: &Connection) -> bool {
    connection.answer.and_then(|answer| answer.pointer("/result/capabilities/session")).is_some_and(|s| !s.is_null())
}

/// A prompt with a key, waiting for its answer.
struct Keyed {
    number: usize,
    session_id: String,
    key: Option<String>,
    /// The message id its key's first submission was answered with: this one is a retry.
    first: Option<String>,
}

/// What the transcript said so far: each `(Session, key)` with the message id its first
/// submission inserted, and per Session the retry being watched (its number and first id).
#[derive(Default)]
struct Inserted {
    ids: HashMap<(String, String), String>,
    watching: HashMap<String, (usize, String)>,
}

impl Inserted {
    fn judge(&mut self, connection: &Connection) -> Vec<String> {
        let mut pending: HashMap<String, Keyed> = HashMap::new();
        let mut problems = Vec::new();
        for (number, from, message) in connection.messages() {
            let keyed = (from == "client").then(|| self.sent(number, message)).flatten();
            if let Some((id, keyed)) = keyed {
                pending.insert(id, keyed);
            } else if from == "agent"
                && let Some((session_id, USER_MESSAGE)) = update_of(message)
                && let Some((retry, first)) = self.watching.get(session_id)
                && message.pointer("/params/update/messageId").and_then(Value::as_str) != Some(first.as_str())
            {
                problems.push(format!(
                    "message {number} inserts another user message in Session `{session_id}` after the retry of message {retry}: a retried prompt inserts nothing"
                ));
            } else if from == "agent"
                && message.get("method").is_none()
                && let Some(keyed) = message.get("id").and_then(|id| pending.remove(&id.to_string()))
            {
                problems.extend(self.answered(number, &keyed, message));
            }
        }
        problems
    }

    /// A client's message: a keyed `session/prompt` to wait for (by its id), which ends the
    /// watch of its Session's earlier retry; a retry is watched from here.
    fn sent(&mut self, number: usize, message: &Value) -> Option<(String, Keyed)> {
        if message.get("method").and_then(Value::as_str) != Some("session/prompt") {
            return None;
        }
        let session_id = message.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        self.watching.remove(&session_id);
        let key = message.pointer("/params/idempotencyKey").filter(|key| !key.is_null())?;
        let key = key.as_str().filter(|key| !key.is_empty() && key.chars().count() <= MAX_KEY).map(str::to_owned);
        let first = key.as_ref().and_then(|key| self.ids.get(&(session_id.clone(), key.clone())).cloned());
        if let Some(first) = &first {
            self.watching.insert(session_id.clone(), (number, first.clone()));
        }
        Some((message.get("id")?.to_string(), Keyed { number, session_id, key, first }))
    }

    /// What is wrong with the answer (message `number`) to a keyed prompt.
    fn answered(&mut self, number: usize, keyed: &Keyed, answer: &Value) -> Option<String> {
        let message_id = answer.pointer("/result/messageId").and_then(Value::as_str);
        let Keyed { number: asked, session_id, .. } = keyed;
        match (&keyed.key, &keyed.first) {
            (None, _) if answer.pointer("/error/code").and_then(Value::as_i64) != Some(-32602) => Some(format!(
                "message {number} answers the prompt of message {asked}, whose idempotencyKey is no string of 1 to {MAX_KEY} characters, without refusing it -32602"
            )),
            (None, _) => None,
            (Some(key), None) => {
                if let Some(message_id) = message_id {
                    self.ids.insert((session_id.clone(), key.clone()), message_id.to_owned());
                }
                None
            }
            (Some(key), Some(first)) if message_id != Some(first.as_str()) => Some(format!(
                "message {number} answers the retry of message {asked} (idempotencyKey `{key}`) with {}, not the messageId `{first}` its first submission was inserted as",
                message_id.map_or_else(|| "no messageId".to_owned(), |id| format!("messageId `{id}`"))
            )),
            (Some(_), Some(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol_schema::v2;
    use serde_json::json;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry};
    use crate::judge::v1_reading::v2_fixture::{connected, result, text, update};

    /// A v2 connection whose agent advertises `capabilities.session`.
    fn keyed_connection() -> Vec<Value> {
        let mut acp = connected();
        acp[1]["message"]["result"]["capabilities"] = json!({"session": {}});
        acp
    }

    fn prompt(id: i64, key: Value) -> Value {
        let params = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "q"}], "idempotencyKey": key});
        entry("client", json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": params}))
    }

    fn inserted(message_id: &str) -> Value {
        update(v2::SessionUpdate::UserMessage(v2::UserMessage::new(message_id).content(vec![text("q")])))
    }

    /// The first submission, then a retry with the same key answered `answer` after `between`.
    fn retried(between: Vec<Value>, answer: Value) -> Capture {
        let mut acp = keyed_connection();
        acp.extend([
            prompt(2, json!("k")),
            inserted("u1"),
            result(2, v2::PromptResponse::new("u1")),
            prompt(3, json!("k")),
        ]);
        acp.extend(between);
        acp.push(answer);
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn a_retry_answered_with_the_first_message_id_passes() {
        assert!(check(INVARIANT, &retried(vec![], result(3, v2::PromptResponse::new("u1")))).is_empty());
    }

    #[test]
    fn a_retry_run_again_is_caught() {
        assert_eq!(
            check(INVARIANT, &retried(vec![inserted("u2")], result(3, v2::PromptResponse::new("u2")))),
            [
                "the live transcript: message 9 inserts another user message in Session `s` after the retry of message 8: a retried prompt inserts nothing",
                "the live transcript: message 10 answers the retry of message 8 (idempotencyKey `k`) with messageId `u2`, not the messageId `u1` its first submission was inserted as",
            ]
        );
    }

    #[test]
    fn an_invalid_key_is_refused() {
        let refused = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Invalid params"}});
        for key in [json!(""), json!("x".repeat(256)), json!(7)] {
            let mut acp = keyed_connection();
            acp.extend([prompt(2, key.clone()), entry("agent", refused.clone())]);
            assert!(check(INVARIANT, &Capture { acp, ..Capture::default() }).is_empty(), "{key}");
            let mut acp = keyed_connection();
            acp.extend([prompt(2, key), result(2, v2::PromptResponse::new("u1"))]);
            assert_eq!(
                check(INVARIANT, &Capture { acp, ..Capture::default() }),
                [
                    "the live transcript: message 6 answers the prompt of message 5, whose idempotencyKey is no string of 1 to 255 characters, without refusing it -32602"
                ]
            );
        }
    }
}
