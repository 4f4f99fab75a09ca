//! ACP protocol version 2 beside v1 (issue 32): the same Turn, told in v2's words.
//!
//! The client asks for a version in `initialize`; asked for 2 or more this agent speaks 2,
//! else 1 (ACP: "If the Agent supports the requested version, it MUST respond with the same
//! version. Otherwise, the Agent MUST respond with the latest version it supports"). In v2 a
//! prompt's answer only acknowledges it, with the id of the user message it inserted; how the
//! Turn ended is the stop reason of the `idle` state update that ends the foreground work, and
//! an honest failure is the `error` stop reason with its JSON-RPC error
//! (agent-client-protocol-schema's `v2::StopReason`; Preview 2026-11-20).
//!
//! The projection ([`super::projection`]) stays one: its v1 updates are rewritten here into v2's
//! upserts by id (a chunk names its message, a tool call is a `tool_call_update` whose first
//! update creates it), and every rewritten update is read back as the crate's v2 type before it
//! is sent, so what goes out is v2's shape by construction.

use agent_client_protocol_schema::{ProtocolVersion, v1, v2};
use serde_json::{Value, json};

/// The version this agent answers a client that asked for `asked`.
pub fn negotiate(asked: Option<u64>) -> ProtocolVersion {
    if asked.is_some_and(|asked| asked >= 2) { ProtocolVersion::V2 } else { ProtocolVersion::V1 }
}

/// The answer to a v2 `initialize`: image prompts are accepted, as in v1; `session/list`,
/// `session/resume` and `session/close` are v2's baseline methods, declared by no capability.
pub fn initialize_response() -> v2::InitializeResponse {
    let prompt = v2::PromptCapabilities::new().image(v2::PromptImageCapabilities::new());
    v2::InitializeResponse::new(
        ProtocolVersion::V2,
        v2::Implementation::new("gauntlet-agent", env!("CARGO_PKG_VERSION")),
    )
    .capabilities(v2::AgentCapabilities::new().session(v2::SessionCapabilities::new().prompt(prompt)))
}

/// The id of a Session's `n`th user message (from 1), live and replayed alike: "If retained and
/// replayed, the message keeps this identifier" (v2 `PromptResponse.messageId`).
fn user_message_id(session_id: &str, n: usize) -> String {
    format!("{session_id}:user:{n}")
}

/// The v2 wording of one Session's updates: which message a chunk belongs to.
#[derive(Debug)]
pub struct Upserts {
    session_id: String,
    /// The Session's user messages so far.
    users: usize,
    /// The user message the running (or replayed) turn answers.
    user: String,
    /// The agent's messages in that turn so far: a tool call ends one, the next text starts
    /// another.
    agent_messages: usize,
    /// The current agent message has text already.
    speaking: bool,
}

impl Upserts {
    /// The updates of `session_id`, which holds `users` user messages so far.
    pub fn new(session_id: &str, users: usize) -> Upserts {
        Upserts { session_id: session_id.to_owned(), users, user: String::new(), agent_messages: 0, speaking: false }
    }

    /// The next user message's id: the turn the next updates belong to.
    pub fn next_user(&mut self) -> String {
        self.users += 1;
        self.user = user_message_id(&self.session_id, self.users);
        self.agent_messages = 0;
        self.speaking = false;
        self.user.clone()
    }

    /// The v2 update for a v1 one, or `None` when v2 has no word for it.
    pub fn update(&mut self, update: v1::SessionUpdate) -> Option<v2::SessionUpdate> {
        let mut value = serde_json::to_value(&update).ok()?;
        let kind = value.get("sessionUpdate")?.as_str()?.to_owned();
        let object = value.as_object_mut()?;
        match kind.as_str() {
            "agent_message_chunk" => {
                if !self.speaking {
                    self.agent_messages += 1;
                    self.speaking = true;
                }
                object.insert("messageId".into(), json!(format!("{}:agent:{}", self.user, self.agent_messages)));
            }
            "agent_thought_chunk" => {
                object.insert("messageId".into(), json!(format!("{}:thought:{}", self.user, self.agent_messages + 1)));
            }
            "user_message_chunk" => {
                let content = object.remove("content")?;
                let id = self.next_user();
                return read(json!({"sessionUpdate": "user_message", "messageId": id, "content": [content]}));
            }
            // ACP's v1 update kinds, not Log types: v2 has one upsert for both.
            "tool_call" | "tool_call_update" => {
                self.speaking = false;
                object.insert("sessionUpdate".into(), json!("tool_call_update"));
            }
            "plan" => {
                let entries = object.remove("entries")?;
                let plan = json!({"type": "items", "planId": format!("{}:plan", self.user), "entries": entries});
                return read(json!({"sessionUpdate": "plan_update", "plan": plan}));
            }
            "usage_update" => {}
            _ => return None,
        }
        read(value)
    }
}

/// The answer to a v2 `session/prompt`: the prompt was inserted as `message_id`.
pub fn prompt_response(message_id: &str) -> v2::PromptResponse {
    v2::PromptResponse::new(message_id.to_owned())
}

/// The v2 update a user message is echoed or replayed as.
pub fn user_message(message_id: &str, text: &str) -> Option<v2::SessionUpdate> {
    read(json!({"sessionUpdate": "user_message", "messageId": message_id, "content": [{"type": "text", "text": text}]}))
}

/// The idle snapshot a resume sends after its replay and before its answer (v2: "Resume MUST
/// send a current-state snapshot after any replay and before its response").
pub fn settled() -> v2::SessionUpdate {
    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(v2::IdleStateUpdate::new()))
}

/// Foreground work started: the `running` state (v2: "the Agent MUST report `running` when
/// foreground work starts").
pub fn running() -> v2::SessionUpdate {
    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(v2::RunningStateUpdate::new()))
}

/// Foreground work ended: the `idle` state with the Turn's stop reason, the same answer a v1
/// prompt gets (ACP-STOP-REASON); a failure is the `error` stop reason carrying the JSON-RPC
/// error a v1 client would have been answered with.
pub fn idle(answer: &Result<v1::PromptResponse, v1::Error>) -> v2::SessionUpdate {
    let stop_reason = match answer {
        Ok(response) => {
            serde_json::to_value(response.stop_reason).ok().and_then(|reason| reason_of(json!({"stopReason": reason})))
        }
        Err(error) => {
            serde_json::to_value(error).ok().and_then(|error| reason_of(json!({"stopReason": "error", "error": error})))
        }
    };
    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(v2::IdleStateUpdate::new().stop_reason(stop_reason)))
}

/// A stop reason (flattened into the idle state) read as v2's.
fn reason_of(value: Value) -> Option<v2::StopReason> {
    let mut state = value;
    state["state"] = json!("idle");
    match serde_json::from_value::<v2::StateUpdate>(state).ok()? {
        v2::StateUpdate::Idle(idle) => idle.stop_reason,
        _ => None,
    }
}

/// An update read as the crate's v2 type: what is sent is v2's shape, not ours.
fn read(value: Value) -> Option<v2::SessionUpdate> {
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_chunk(text: &str) -> v1::SessionUpdate {
        v1::SessionUpdate::AgentMessageChunk(v1::ContentChunk::new(v1::ContentBlock::from(text)))
    }

    #[test]
    fn version_two_is_spoken_only_to_a_client_that_asks_for_it() {
        assert_eq!(negotiate(Some(2)), ProtocolVersion::V2);
        assert_eq!(negotiate(Some(3)), ProtocolVersion::V2);
        assert_eq!(negotiate(Some(1)), ProtocolVersion::V1);
        assert_eq!(negotiate(None), ProtocolVersion::V1);
    }

    /// Chunks name their message; a tool call ends the agent's message and the next text
    /// starts another; tool calls are upserts.
    #[test]
    fn chunks_name_their_message_and_tool_calls_are_upserts() {
        let mut upserts = Upserts::new("s", 0);
        assert_eq!(upserts.next_user(), user_message_id("s", 1));
        let first = serde_json::to_value(upserts.update(v1_chunk("a")).unwrap()).unwrap();
        assert_eq!(first["messageId"], "s:user:1:agent:1");
        let call =
            v1::SessionUpdate::ToolCall(v1::ToolCall::new("c1", "read x").status(v1::ToolCallStatus::InProgress));
        let call = serde_json::to_value(upserts.update(call).unwrap()).unwrap();
        assert_eq!(
            (call["sessionUpdate"].as_str(), call["title"].as_str()),
            (Some("tool_call_update"), Some("read x"))
        );
        let next = serde_json::to_value(upserts.update(v1_chunk("b")).unwrap()).unwrap();
        assert_eq!(next["messageId"], "s:user:1:agent:2");
    }

    #[test]
    fn a_failure_is_the_error_stop_reason_with_its_error() {
        let failed = idle(&Err(v1::Error::internal_error().data(json!({"terminalStatus": "failed"}))));
        let value = serde_json::to_value(failed).unwrap();
        assert_eq!(value["state"], "idle");
        assert_eq!(value["stopReason"], "error");
        assert_eq!(value["error"]["code"], -32603);
        assert_eq!(value["error"]["data"]["terminalStatus"], "failed");
        let done = serde_json::to_value(idle(&Ok(v1::PromptResponse::new(v1::StopReason::EndTurn)))).unwrap();
        assert_eq!((done["state"].as_str(), done["stopReason"].as_str()), (Some("idle"), Some("end_turn")));
    }
}
