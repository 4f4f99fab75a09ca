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

use std::collections::{HashMap, HashSet};

use agent_client_protocol_schema::{ProtocolVersion, v1, v2};
use serde_json::{Value, json};

use crate::event::{Event, EventType, Prompt};

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

/// The `idempotencyKey`s of a Session's prompts, each with the id of the user message it
/// inserted, read from its History: the key outlives the connection and the process, as long
/// as the message ("The Agent MUST recognize the key for as long as it retains the message,
/// including across connections and Agent restarts").
pub fn submitted_keys(session_id: &str, history: &[Event]) -> HashMap<String, String> {
    history
        .iter()
        .filter(|event| event.kind() == EventType::UserMessage)
        .enumerate()
        .filter_map(|(n, event)| {
            Some((event.str_field("idempotency_key")?.to_owned(), user_message_id(session_id, n + 1)))
        })
        .collect()
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
    /// The agent messages and thoughts of the turn already created by their upsert.
    created: HashSet<String>,
    /// The content of the user message being replayed, so far.
    user_content: Vec<Value>,
}

impl Upserts {
    /// The updates of `session_id`, which holds `users` user messages so far.
    pub fn new(session_id: &str, users: usize) -> Upserts {
        Upserts {
            session_id: session_id.to_owned(),
            users,
            user: String::new(),
            agent_messages: 0,
            speaking: false,
            created: HashSet::new(),
            user_content: Vec::new(),
        }
    }

    /// The next user message's id: the turn the next updates belong to.
    pub fn next_user(&mut self) -> String {
        self.users += 1;
        self.user = user_message_id(&self.session_id, self.users);
        self.agent_messages = 0;
        self.speaking = false;
        self.created.clear();
        self.user.clone()
    }

    /// The v2 updates for a v1 one: none when v2 has no word for it, and before the first
    /// chunk of a message the upsert that creates it, empty (`content: []`), as the ACP test
    /// kit reads v2: a chunk appends to a message the Client already holds.
    pub fn update(&mut self, update: v1::SessionUpdate) -> Vec<v2::SessionUpdate> {
        let Some(mut value) = serde_json::to_value(&update).ok() else { return Vec::new() };
        let (kind, id) = match value.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => ("agent_message", self.agent_message_id()),
            Some("agent_thought_chunk") => {
                ("agent_thought", format!("{}:thought:{}", self.user, self.agent_messages + 1))
            }
            _ => return self.rewrite(value).into_iter().collect(),
        };
        value["messageId"] = json!(id);
        let created = self
            .created
            .insert(id.clone())
            .then(|| read(json!({"sessionUpdate": kind, "messageId": id, "content": []})))
            .flatten();
        created.into_iter().chain(read(value)).collect()
    }

    /// The id of the agent message a chunk of text continues, or starts.
    fn agent_message_id(&mut self) -> String {
        if !self.speaking {
            self.agent_messages += 1;
            self.speaking = true;
        }
        format!("{}:agent:{}", self.user, self.agent_messages)
    }

    /// The v2 update for a v1 one that is no chunk of an agent's message, or `None` when v2
    /// has no word for it.
    fn rewrite(&mut self, mut value: Value) -> Option<v2::SessionUpdate> {
        let kind = value.get("sessionUpdate")?.as_str()?.to_owned();
        let object = value.as_object_mut()?;
        match kind.as_str() {
            // A user message's text opens it; a block after it (a link it pointed at) is more
            // of the same message, upserted whole.
            "user_message_chunk" => {
                let content = object.remove("content")?;
                if content["type"] == "text" || self.user_content.is_empty() {
                    self.next_user();
                    self.user_content.clear();
                }
                self.user_content.push(content);
                return read(
                    json!({"sessionUpdate": "user_message", "messageId": self.user, "content": self.user_content}),
                );
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

/// A v2 `session/prompt` read as the v1 request that says the same (its content blocks have
/// one shape in both), and its `idempotencyKey`, validated as v2 asks: "Agents MUST reject any
/// other value with `-32602` (Invalid params) and MUST NOT treat it as omitted".
pub fn prompt_request(params: Value) -> Result<(v1::PromptRequest, Option<String>), serde_json::Error> {
    let request: v2::PromptRequest = serde_json::from_value(params)?;
    let key = request.idempotency_key.as_ref().map(|key| key.as_str().to_owned());
    let blocks = serde_json::from_value(serde_json::to_value(&request.prompt)?)?;
    Ok((v1::PromptRequest::new(request.session_id.0.to_string(), blocks), key))
}

/// Whether a v2 `session/resume` replays: `replayFrom` `start` does; omitted or `null` does
/// not; any other cursor is refused, as v2 asks: "Agents MUST reject unsupported cursor types
/// or malformed cursor values with `-32602` (Invalid params), rather than substituting another
/// cursor or resuming without replay".
pub fn replays(request: &v2::ResumeSessionRequest) -> Result<bool, String> {
    match &request.replay_from {
        None => Ok(false),
        Some(v2::ReplayFrom::Start(_)) => Ok(true),
        Some(other) => {
            Err(format!("unsupported replayFrom cursor {}", serde_json::to_string(other).unwrap_or_default()))
        }
    }
}

/// The answer to a v2 `session/new`: the Session and its one config option.
pub fn new_session_response(session_id: &str, model: v2::SessionConfigOption) -> v2::NewSessionResponse {
    v2::NewSessionResponse::new(session_id.to_owned()).config_options(vec![model])
}

/// The model option of a Session in v2: `current` among `choices`.
pub fn model_option(current: &str, choices: &[String]) -> v2::SessionConfigOption {
    let choices: Vec<v2::SessionConfigSelectOption> =
        choices.iter().map(|model| v2::SessionConfigSelectOption::new(model.clone(), model.clone())).collect();
    v2::SessionConfigOption::select("model", "Model", current.to_owned(), choices)
        .category(v2::SessionConfigOptionCategory::Model)
}

/// The end of a `session/resume` replay, sent once after its last replayed update and before
/// the snapshot and the answer, even when nothing was replayed (v2 `ReplayComplete`: "The Agent
/// MUST send this exactly once on a session for each `session/resume` request with a
/// `replayFrom` cursor, after the last replayed update for that session and before the
/// response, even for an empty replay").
pub fn replay_complete() -> v2::SessionUpdate {
    v2::SessionUpdate::ReplayComplete(v2::ReplayComplete::new())
}

/// The v2 update a prompt is echoed as when inserted: its text, then its links.
pub fn user_message(message_id: &str, prompt: &Prompt) -> Option<v2::SessionUpdate> {
    let text = json!({"type": "text", "text": prompt.text});
    let links = prompt.links.iter().map(|link| json!({"type": "resource_link", "uri": link.uri, "name": link.name}));
    let content: Vec<Value> = std::iter::once(text).chain(links).collect();
    read(json!({"sessionUpdate": "user_message", "messageId": message_id, "content": content}))
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

/// The stdio servers of a v2 request's `mcpServers` (its command an absolute path); HTTP and
/// SSE servers, which this agent does not declare, are not started.
pub fn stdio_servers(servers: &[v2::McpServer]) -> Vec<crate::tools::mcp::McpServer> {
    servers
        .iter()
        .filter_map(|server| match server {
            v2::McpServer::Stdio(stdio) => Some(crate::tools::mcp::McpServer {
                name: stdio.name.clone(),
                command: stdio.command.0.clone(),
                args: stdio.args.clone(),
                env: stdio.env.iter().map(|variable| (variable.name.clone(), variable.value.clone())).collect(),
            }),
            _ => None,
        })
        .collect()
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

    fn said(upserts: &mut Upserts, update: v1::SessionUpdate) -> Vec<Value> {
        upserts.update(update).into_iter().map(|update| serde_json::to_value(update).unwrap()).collect()
    }

    /// Chunks name their message, created empty by its upsert before its first chunk; a tool
    /// call ends the agent's message and the next text starts another; tool calls are upserts.
    #[test]
    fn chunks_name_their_message_and_tool_calls_are_upserts() {
        let mut upserts = Upserts::new("s", 0);
        assert_eq!(upserts.next_user(), user_message_id("s", 1));
        let first = said(&mut upserts, v1_chunk("a"));
        assert_eq!(first[0], json!({"sessionUpdate": "agent_message", "messageId": "s:user:1:agent:1", "content": []}));
        assert_eq!((first.len(), &first[1]["messageId"]), (2, &json!("s:user:1:agent:1")));
        assert_eq!(said(&mut upserts, v1_chunk("b")).len(), 1, "the message exists already");
        let call =
            v1::SessionUpdate::ToolCall(v1::ToolCall::new("c1", "read x").status(v1::ToolCallStatus::InProgress));
        let call = said(&mut upserts, call);
        assert_eq!(
            (call[0]["sessionUpdate"].as_str(), call[0]["title"].as_str()),
            (Some("tool_call_update"), Some("read x"))
        );
        let next = said(&mut upserts, v1_chunk("c"));
        assert_eq!(
            (next[0]["sessionUpdate"].as_str(), next[1]["messageId"].as_str()),
            (Some("agent_message"), Some("s:user:1:agent:2"))
        );
        let thought = v1::SessionUpdate::AgentThoughtChunk(v1::ContentChunk::new(v1::ContentBlock::from("hm")));
        let thought = said(&mut upserts, thought);
        assert_eq!(
            (thought[0]["sessionUpdate"].as_str(), thought[0]["content"].clone()),
            (Some("agent_thought"), json!([]))
        );
    }

    /// A replayed user message's link is more of the same message, upserted whole.
    #[test]
    fn a_replayed_link_is_part_of_its_user_message() {
        let mut upserts = Upserts::new("s", 0);
        let user = |block: v1::ContentBlock| v1::SessionUpdate::UserMessageChunk(v1::ContentChunk::new(block));
        let text = said(&mut upserts, user(v1::ContentBlock::from("read")));
        let link = v1::ContentBlock::ResourceLink(v1::ResourceLink::new("a.md", "https://e.com/a.md"));
        let linked = said(&mut upserts, user(link));
        assert_eq!((&text[0]["messageId"], &linked[0]["messageId"]), (&json!("s:user:1"), &json!("s:user:1")));
        assert_eq!(linked[0]["content"].as_array().map(Vec::len), Some(2), "{linked:?}");
        assert_eq!(said(&mut upserts, user(v1::ContentBlock::from("next")))[0]["messageId"], "s:user:2");
    }

    /// A prompt's key is validated as v2 asks, and its blocks read as v1's; a retried key
    /// names the user message its first submission inserted.
    #[test]
    fn a_prompts_key_is_validated_and_known_from_history() {
        let prompt =
            |key: Value| json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": key});
        let (request, key) = prompt_request(prompt(json!("k1"))).unwrap();
        assert_eq!((request.prompt.len(), key.as_deref()), (1, Some("k1")));
        assert_eq!(prompt_request(prompt(Value::Null)).unwrap().1, None);
        for bad in [json!(""), json!("x".repeat(256)), json!(7)] {
            assert!(prompt_request(prompt(bad.clone())).is_err(), "{bad}");
        }
        let event = |payload| crate::event::Event::stamp(payload, "s", "0".into(), "t".into(), Some(0));
        let history = [
            event(crate::event::Payload::user_message("one")),
            event(crate::event::Payload::user_message_of(&Prompt {
                text: "two".into(),
                idempotency_key: Some("k2".into()),
                ..Prompt::default()
            })),
        ];
        assert_eq!(submitted_keys("s", &history), HashMap::from([("k2".to_owned(), "s:user:2".to_owned())]));
    }

    /// Only `replayFrom` `start` replays; an unknown cursor is refused, never read as none.
    #[test]
    fn a_resume_replays_from_the_start_or_is_refused() {
        let resume = |from: Value| -> v2::ResumeSessionRequest {
            serde_json::from_value(json!({"sessionId": "s", "cwd": "/w", "replayFrom": from})).unwrap()
        };
        assert_eq!(replays(&resume(json!({"type": "start"}))), Ok(true));
        assert_eq!(replays(&resume(Value::Null)), Ok(false));
        assert!(replays(&resume(json!({"type": "message", "messageId": "m"}))).is_err());
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
