//! The v1 reading of an ACP transcript: a transcript whose `initialize` answer negotiated
//! protocol version 2 read as the v1 transcript that says the same, so every ACP rule, written
//! for v1, judges a v2 agent unchanged.
//!
//! The reading is entry for entry: the same length and indices as the transcript, so a finding
//! that names message N names the message the agent sent. An entry with nothing to say in v1
//! becomes a note, `{"from": "reading", "note": ..}`: no `message`, which message readers skip,
//! and from neither side, since an agent's entry without one is a line that was not JSON
//! (ACP-JSONRPC-ERRORS reads it so).
//!
//! ACP v2 moves a prompt's end out of its answer: "Processing and completion are reported
//! through `state_update` session updates" (`PromptResponse`). So the `session/prompt` answer,
//! only an acknowledgement, is a note, and the idle `state_update` that ends the running
//! prompt's foreground work is that prompt's v1 answer. Connections that negotiated v1 are kept
//! as they are; a transcript with none that negotiated v2 is returned borrowed.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Value, json};

use crate::capture::{Capture, Reported};
use crate::judge::transcript;
use crate::judge::transcript::negotiates_v2;

/// ACP's user message upsert (v2). Not a Log type.
const USER_MESSAGE: &str = "user_message"; // ACP's update kind, not a Log type
/// v1's tool call creation. Not a Log type.
const TOOL_CALL: &str = "tool_call"; // ACP's update kind, not a Log type

/// `transcript` as v1 says it, entry for entry; borrowed unless a connection negotiated v2.
pub fn v1_reading(transcript: &[Value]) -> Cow<'_, [Value]> {
    if !transcript.iter().any(answers_v2) {
        return Cow::Borrowed(transcript);
    }
    let mut reader = Reader::default();
    Cow::Owned(transcript.iter().map(|entry| reader.read(entry)).collect())
}

/// `capture` with both transcripts in their v1 reading, and each prompt answer the driver
/// reported re-read from it (a v2 prompt's answer is only its acknowledgement, so the turn's
/// answer is the idle state that ended it); borrowed when neither transcript negotiated v2.
pub fn of_capture(capture: &Capture) -> Cow<'_, Capture> {
    let (acp, acp_load) = (v1_reading(&capture.acp), v1_reading(&capture.acp_load));
    if matches!((&acp, &acp_load), (Cow::Borrowed(_), Cow::Borrowed(_))) {
        return Cow::Borrowed(capture);
    }
    let reported = reported(&acp, &capture.reported);
    Cow::Owned(Capture { acp: acp.into_owned(), acp_load: acp_load.into_owned(), reported, ..capture.clone() })
}

/// The driver's answers, one per scenario turn (its last prompts not sent while another ran),
/// each replaced by that prompt's answer in the reading when it has one.
fn reported(reading: &[Value], driver: &[Reported]) -> Vec<Reported> {
    let exchanges = transcript::exchanges(reading);
    let plain: Vec<_> = exchanges.iter().filter(|exchange| !exchange.busy).collect();
    let first = plain.len().saturating_sub(driver.len());
    let offset = driver.len().saturating_sub(plain.len());
    driver
        .iter()
        .enumerate()
        .map(|(idx, said)| {
            let exchange = idx.checked_sub(offset).and_then(|idx| plain.get(first + idx));
            exchange.and_then(|exchange| exchange.answer).map_or_else(|| said.clone(), Reported::from_answer)
        })
        .collect()
}

/// An agent's answer names protocol version 2: a transcript without one negotiated none.
fn answers_v2(entry: &Value) -> bool {
    entry["from"] == "agent" && entry.pointer("/message/result/protocolVersion").and_then(Value::as_u64) == Some(2)
}

/// What the reading knows of one connection as it goes.
#[derive(Default)]
struct Reader {
    /// The connection negotiated v2.
    v2: bool,
    /// The `initialize` request, until its answer.
    initialize: Option<Value>,
    /// The client's requests by id (their JSON text): their method.
    asked: HashMap<String, String>,
    /// Prompts sent and not yet ended, oldest first: their ids.
    pending: VecDeque<Value>,
    /// A `session/resume` awaiting its answer: its id.
    resuming: Option<Value>,
    /// Message ids of the prompts' user messages, which the agent echoes live.
    echoes: HashSet<String>,
    /// Each message's text so far, by message id.
    texts: HashMap<String, String>,
    /// Tool calls already created, by id.
    tool_calls: HashSet<String>,
    /// Keyed prompts awaiting their acknowledgement, by request id: their Session and key.
    keyed: HashMap<String, (String, String)>,
    /// The `(Session, idempotencyKey)` of each prompt acknowledged so far.
    inserted: HashSet<(String, String)>,
    /// Retries of an inserted prompt awaiting their answer, by request id.
    retries: HashSet<String>,
}

impl Reader {
    fn read(&mut self, entry: &Value) -> Value {
        let Some(message) = entry.get("message") else { return entry.clone() };
        let from = entry.get("from").and_then(Value::as_str).unwrap_or_default();
        if from == "client" && message["method"] == "initialize" {
            // A new connection; the prompts inserted before it are still the Session's.
            let inserted = std::mem::take(&mut self.inserted);
            *self = Reader { initialize: Some(message.clone()), inserted, ..Reader::default() };
            return entry.clone();
        }
        if from == "agent"
            && message.get("method").is_none()
            && let Some(initialize) = self.initialize.take_if(|initialize| message.get("id") == initialize.get("id"))
        {
            self.v2 = negotiates_v2(&initialize, message);
            return entry.clone();
        }
        if !self.v2 {
            return entry.clone();
        }
        match from {
            "client" => self.client(entry, message),
            _ => match message.get("method") {
                Some(method) if method == "session/update" => self.update(entry, message),
                Some(_) => entry.clone(),
                None => self.response(entry, message),
            },
        }
    }

    /// A client's message: requests are remembered for their answers. A `session/resume` with
    /// `replayFrom` is v1's `session/load`: "Supplying `{ "type": "start" }` means the Agent MUST
    /// replay all retained conversation history before responding" (`ResumeSessionRequest`).
    fn client(&mut self, entry: &Value, message: &Value) -> Value {
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        if let Some(id) = message.get("id") {
            self.asked.insert(id.to_string(), method.to_owned());
            match method {
                "session/prompt" if self.retries_inserted(id, message) => {
                    return note(
                        "v2: the retry of a prompt already inserted (its idempotencyKey), no prompt of its own",
                    );
                }
                "session/prompt" => self.pending.push_back(id.clone()),
                "session/resume" => self.resuming = Some(id.clone()),
                _ => {}
            }
        }
        let replays = message.pointer("/params/replayFrom").is_some_and(|from| !from.is_null());
        if method == "session/resume" && replays {
            let mut read = entry.clone();
            read["message"]["method"] = json!("session/load");
            read["note"] = json!("v2: session/resume with replayFrom, read as v1's session/load");
            return read;
        }
        entry.clone()
    }

    /// Whether prompt `id` retries one this connection saw inserted (the same Session and
    /// `idempotencyKey`: "A retry of a recorded insertion returns the original `messageId`
    /// without inserting another message", `PromptRequest`), which v1 has no word for; a keyed
    /// prompt that is none is remembered for its acknowledgement.
    fn retries_inserted(&mut self, id: &Value, message: &Value) -> bool {
        let session = message.pointer("/params/sessionId").and_then(Value::as_str);
        let key = message.pointer("/params/idempotencyKey").and_then(Value::as_str);
        let Some(keyed) = session.zip(key).map(|(session, key)| (session.to_owned(), key.to_owned())) else {
            return false;
        };
        if self.inserted.contains(&keyed) {
            self.retries.insert(id.to_string());
            return true;
        }
        self.keyed.insert(id.to_string(), keyed);
        false
    }

    /// An agent's answer. A prompt's result only acknowledges it; its error is the honest
    /// pre-insertion failure, as in v1 ("A prompt failure before insertion also requires an
    /// error response to `session/prompt`", `StopReason::Error`).
    fn response(&mut self, entry: &Value, message: &Value) -> Value {
        let id = message.get("id").unwrap_or(&Value::Null);
        if self.resuming.as_ref() == Some(id) {
            self.resuming = None;
        }
        let method = self.asked.get(&id.to_string()).map(String::as_str);
        if method != Some("session/prompt") {
            return entry.clone();
        }
        if self.retries.remove(&id.to_string()) {
            return note("v2: the retry of a prompt already inserted, answered");
        }
        if let Some(keyed) = self.keyed.remove(&id.to_string()).filter(|_| message.get("result").is_some()) {
            self.inserted.insert(keyed);
        }
        if message.get("error").is_some() {
            self.pending.retain(|pending| pending != id);
            return entry.clone();
        }
        let Some(acknowledged) = message.pointer("/result/messageId").and_then(Value::as_str) else {
            return note("v2: prompt acknowledged without a messageId");
        };
        self.echoes.insert(acknowledged.to_owned());
        note(&format!("v2: prompt acknowledged as {acknowledged}"))
    }

    /// A `session/update`, by its kind.
    fn update(&mut self, entry: &Value, message: &Value) -> Value {
        let update = &message["params"]["update"];
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
        let with = |update: Value| {
            let mut read = entry.clone();
            read["message"]["params"]["update"] = update;
            read
        };
        match kind {
            "state_update" => self.state(update),
            "user_message_chunk" if self.is_echo(update) => note("v2: the running prompt's user message echoed"),
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => with(self.chunk(update)),
            USER_MESSAGE if self.is_echo(update) => note("v2: the running prompt's user message echoed"),
            USER_MESSAGE | "agent_message" | "agent_thought" => self
                .upsert(update, &format!("{kind}_chunk"))
                .map_or_else(|| note(&format!("v2: {kind} adds no text")), with),
            "tool_call_update" => with(self.tool_call(update)),
            "plan_update" => plan(update).map_or_else(|| entry.clone(), with),
            "replay_complete" => note("v2: replay complete"),
            _ => entry.clone(),
        }
    }

    /// A `state_update`: the idle state that ends the running prompt's foreground work is
    /// its answer ("The Agent MUST report this stop reason on an idle `state_update` when
    /// cancellation ends active foreground work", `StopReason::Cancelled`; the other reasons
    /// likewise end it). The snapshot a resume sends "after any requested history replay and
    /// before this response" (`ResumeSessionResponse`), an idle with no prompt running, and
    /// every other state are notes.
    fn state(&mut self, update: &Value) -> Value {
        let state = update.get("state").and_then(Value::as_str).unwrap_or("?");
        if state != "idle" {
            return note(&format!("v2: state {state}"));
        }
        if self.resuming.is_some() {
            return note("v2: idle snapshot of a resume");
        }
        let Some(id) = self.pending.pop_front() else { return note("v2: idle with no prompt running") };
        json!({"from": "agent", "message": idle_answer(update, id), "note": "v2: idle state_update, read as the prompt's answer"})
    }

    /// A user message the agent echoes for a prompt of this connection ("Agents MUST echo the
    /// message during the live session", `PromptResponse::message_id`): its id is a prompt's,
    /// or it comes while a prompt runs outside a resume's replay (the echo may come before the
    /// acknowledgement that names it). v1 does not echo.
    fn is_echo(&mut self, update: &Value) -> bool {
        let id = update.get("messageId").and_then(Value::as_str).unwrap_or_default();
        if self.echoes.contains(id) {
            return true;
        }
        let echo = self.resuming.is_none() && !self.pending.is_empty() && !self.texts.contains_key(id);
        if echo {
            self.echoes.insert(id.to_owned());
        }
        echo
    }

    /// A content chunk keeps its content; its `messageId` goes, and its text counts as shown
    /// for a later upsert of the same message.
    fn chunk(&mut self, update: &Value) -> Value {
        let mut read = update.clone();
        let id = read.as_object_mut().and_then(|fields| fields.remove("messageId"));
        if let (Some(id), Some(text)) = (id, update.pointer("/content/text").and_then(Value::as_str)) {
            self.texts.entry(id.as_str().unwrap_or_default().to_owned()).or_default().push_str(text);
        }
        read
    }

    /// A message upsert as the chunk of `kind` holding the text it adds to what its message
    /// showed before ("fields in the new update patch the previous fields for that message",
    /// and its content array replaces the whole content): `None` when it adds none (content
    /// omitted, cleared, or the same). A rewrite that does not extend the earlier text cannot
    /// be said as a v1 chunk, which only appends: it is read as its whole new text.
    fn upsert(&mut self, update: &Value, kind: &str) -> Option<Value> {
        let content = update.get("content")?.as_array()?;
        let id = update.get("messageId").and_then(Value::as_str).unwrap_or_default();
        let text: String = content.iter().filter_map(|block| block.get("text").and_then(Value::as_str)).collect();
        let before = self.texts.insert(id.to_owned(), text.clone()).unwrap_or_default();
        let added = text.strip_prefix(before.as_str()).unwrap_or(&text);
        let block = match content.as_slice() {
            [only] if only.get("text").is_none() => only.clone(),
            _ if added.is_empty() => return None,
            _ => json!({"type": "text", "text": added}),
        };
        Some(json!({"sessionUpdate": kind, "content": block}))
    }

    /// A tool call upsert: the first for its id creates the call ("A tool call has been created
    /// or updated", `SessionUpdate::ToolCallUpdate`), v1's `tool_call`, whose `title` and
    /// `status` v1 requires: its `name` or id, and `pending`. Later ones patch it, as v1's
    /// `tool_call_update` does.
    fn tool_call(&mut self, update: &Value) -> Value {
        let id = update.get("toolCallId").and_then(Value::as_str).unwrap_or_default();
        if !self.tool_calls.insert(id.to_owned()) {
            return update.clone();
        }
        let mut call: serde_json::Map<String, Value> = update
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, value)| !value.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        call.insert("sessionUpdate".into(), json!(TOOL_CALL));
        let title = update.get("name").filter(|name| name.is_string()).cloned().unwrap_or_else(|| json!(id));
        call.entry("title").or_insert(title);
        call.entry("status").or_insert(json!("pending"));
        Value::Object(call)
    }
}

/// The v1 answer to prompt `id` that an idle `state_update` ending its foreground work says:
/// its stop reason, or for `error` the JSON-RPC error it carries.
pub fn idle_answer(update: &Value, id: Value) -> Value {
    match update.get("stopReason").and_then(Value::as_str) {
        Some("error") => json!({"jsonrpc": "2.0", "id": id, "error": failure(update)}),
        Some(reason) => json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}}),
        None => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
    }
}

/// A note entry: what the reading read, where v1 has no message for it.
fn note(what: &str) -> Value {
    json!({"from": "reading", "note": what})
}

/// The JSON-RPC error an idle `error` stop carries, or a generic internal error when it
/// carries none ("Omitted and `null` are equivalent and mean the Agent is not reporting
/// failure details", `ErrorStopReason::error`).
fn failure(update: &Value) -> Value {
    match update.get("error").filter(|error| error.is_object()) {
        Some(error) => error.clone(),
        None => json!({"code": -32603, "message": "Internal error: the agent reported no details of the failure"}),
    }
}

/// A `plan_update` of items as v1's `plan`, the whole list; other plans (markdown) have no v1
/// form.
fn plan(update: &Value) -> Option<Value> {
    let plan = update.get("plan").filter(|plan| plan["type"] == "items")?;
    Some(json!({"sessionUpdate": "plan", "entries": plan.get("entries").cloned().unwrap_or(json!([]))}))
}

/// v2 transcripts built from the crate's own v2 types, so their shapes are the schema's.
#[cfg(test)]
pub(crate) mod v2_fixture {
    use agent_client_protocol_schema::{ProtocolVersion, v2};
    use serde::Serialize;
    use serde_json::{Value, json};

    use crate::judge::fixture::entry;

    fn to(value: impl Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    /// A text content block.
    pub fn text(text: &str) -> v2::ContentBlock {
        v2::ContentBlock::Text(v2::TextContent::new(text))
    }

    /// A client request.
    pub fn request(id: i64, method: &str, params: impl Serialize) -> Value {
        entry("client", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": to(params)}))
    }

    /// An agent's result.
    pub fn result(id: i64, result: impl Serialize) -> Value {
        entry("agent", json!({"jsonrpc": "2.0", "id": id, "result": to(result)}))
    }

    /// An agent's `session/update` of Session `s`.
    pub fn update(update: v2::SessionUpdate) -> Value {
        let params = to(v2::UpdateSessionNotification::new("s", update));
        entry("agent", json!({"jsonrpc": "2.0", "method": "session/update", "params": params}))
    }

    /// An idle `state_update` with a stop reason.
    pub fn idle(stop: v2::StopReason) -> Value {
        update(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(v2::IdleStateUpdate::new().stop_reason(stop))))
    }

    /// `initialize` asking for and answered with protocol version 2, then `session/new` (ids 0, 1).
    pub fn connected() -> Vec<Value> {
        let client = v2::InitializeRequest::new(ProtocolVersion::V2, v2::Implementation::new("gauntlet", "0"));
        let agent = v2::InitializeResponse::new(ProtocolVersion::V2, v2::Implementation::new("agent", "1"));
        vec![
            request(0, "initialize", client),
            result(0, agent),
            request(1, "session/new", v2::NewSessionRequest::new("/w")),
            result(1, v2::NewSessionResponse::new("s")),
        ]
    }

    /// One v2 turn, prompt `id`: the prompt, its echo, its acknowledgement, `running`, the
    /// answer streamed as two chunks then upserted whole, and the idle state with `stop`.
    pub fn turn(id: i64, prompt: &str, answer: &[&str], stop: v2::StopReason) -> Vec<Value> {
        let (user, agent) = (format!("u{id}"), format!("a{id}"));
        let mut turn = vec![
            request(id, "session/prompt", v2::PromptRequest::new("s", vec![text(prompt)])),
            update(v2::SessionUpdate::UserMessage(v2::UserMessage::new(user.as_str()).content(vec![text(prompt)]))),
            result(id, v2::PromptResponse::new(user.as_str())),
            update(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(v2::RunningStateUpdate::new()))),
        ];
        for piece in answer {
            turn.push(update(v2::SessionUpdate::AgentMessageChunk(v2::ContentChunk::new(text(piece), agent.as_str()))));
        }
        if !answer.is_empty() {
            let whole = v2::AgentMessage::new(agent.as_str()).content(vec![text(&answer.concat())]);
            turn.push(update(v2::SessionUpdate::AgentMessage(whole)));
        }
        turn.push(idle(stop));
        turn
    }

    /// A connection and one turn.
    pub fn one_turn(prompt: &str, answer: &[&str], stop: v2::StopReason) -> Vec<Value> {
        let mut transcript = connected();
        transcript.extend(turn(2, prompt, answer, stop));
        transcript
    }

    /// The error stop reason carrying `error`.
    pub fn failed(error: Option<v2::Error>) -> v2::StopReason {
        v2::StopReason::Error(v2::ErrorStopReason::new().error(error))
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol_schema::v2;
    use serde_json::json;

    use super::v2_fixture::{connected, failed, idle, one_turn, request, result, text, update};
    use super::*;
    use crate::judge::fixture::{chunk, entry, prompt};
    use crate::judge::transcript::{exchanges, shown_text};

    /// A v1 transcript is its own reading, not a copy.
    #[test]
    fn a_v1_transcript_is_read_as_it_is() {
        let transcript = [entry("client", prompt(1, "p")), entry("agent", chunk("agent_message_chunk", "a"))];
        assert!(matches!(v1_reading(&transcript), Cow::Borrowed(_)));
    }

    /// Entry for entry: the acknowledgement, the echo, `running` and an upsert that adds
    /// nothing are notes; the chunks keep their text; the idle state is the prompt's answer.
    #[test]
    fn a_clean_v2_turn_reads_as_its_v1_turn() {
        let transcript = one_turn("Name a prime.", &["Sev", "en."], v2::StopReason::EndTurn);
        let read = v1_reading(&transcript);
        assert_eq!(read.len(), transcript.len());
        let notes: Vec<&str> = read.iter().filter_map(|entry| entry["note"].as_str()).collect();
        assert_eq!(
            notes,
            [
                "v2: the running prompt's user message echoed",
                "v2: prompt acknowledged as u2",
                "v2: state running",
                "v2: agent_message adds no text",
                "v2: idle state_update, read as the prompt's answer",
            ]
        );
        assert!(read[5].get("message").is_none() && read[6].get("message").is_none());
        assert_eq!(
            read[9]["message"]["params"]["update"],
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "en."}})
        );
        assert_eq!(read[11]["message"], json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}));
        let found = exchanges(&read);
        assert_eq!((shown_text(&found[0]), found[0].answered_at), ("Seven.".to_owned(), Some(11)));
    }

    /// `error` is the honest failure: a JSON-RPC error, its own object or a generic one.
    #[test]
    fn an_error_stop_reads_as_a_json_rpc_error() {
        let error = v2::Error::new(-32603, "the model failed").data(json!({"terminalStatus": "failed"}));
        let read = v1_reading(&one_turn("q", &[], failed(Some(error.clone())))).into_owned();
        let answer = &read.last().unwrap()["message"];
        assert_eq!(answer["error"], serde_json::to_value(&error).unwrap());
        assert_eq!(answer["id"], 2);
        let read = v1_reading(&one_turn("q", &[], failed(None))).into_owned();
        assert_eq!(read.last().unwrap()["message"]["error"]["code"], -32603);
        let read = v1_reading(&one_turn("q", &["a"], v2::StopReason::Cancelled)).into_owned();
        assert_eq!(read.last().unwrap()["message"]["result"]["stopReason"], "cancelled");
    }

    /// An upsert that extends its message says what it adds; one that rewrites it says its
    /// whole new text, the nearest a v1 chunk, which only appends, comes to.
    #[test]
    fn a_message_upsert_reads_as_the_text_it_adds() {
        let upsert =
            |said: &str| update(v2::SessionUpdate::AgentMessage(v2::AgentMessage::new("a").content(vec![text(said)])));
        let mut transcript = connected();
        transcript.extend([upsert("Hello"), upsert("Hello, world"), upsert("Goodbye")]);
        let read = v1_reading(&transcript);
        let texts: Vec<&str> = read[4..]
            .iter()
            .map(|entry| entry["message"]["params"]["update"]["content"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["Hello", ", world", "Goodbye"]);
    }

    /// The first upsert of a tool call creates it: v1's `tool_call`, titled by its name, and
    /// `pending` unless it says otherwise; later ones are v1's `tool_call_update`.
    #[test]
    fn the_first_tool_call_upsert_creates_the_call() {
        let call = v2::ToolCallUpdate::new("c1").name("read".to_owned());
        let done = v2::ToolCallUpdate::new("c1").status(v2::ToolCallStatus::Completed);
        let mut transcript = connected();
        transcript
            .extend([update(v2::SessionUpdate::ToolCallUpdate(call)), update(v2::SessionUpdate::ToolCallUpdate(done))]);
        let read = v1_reading(&transcript);
        let created = &read[4]["message"]["params"]["update"];
        assert_eq!(
            (&created["sessionUpdate"], &created["title"], &created["status"]),
            (&json!("tool_call"), &json!("read"), &json!("pending"))
        );
        assert_eq!(read[5]["message"]["params"]["update"]["sessionUpdate"], "tool_call_update");
    }

    /// A prompt retried with the key of one inserted is no prompt of its own in v1's words:
    /// its request and its answer are notes, so the turn is the first submission's alone.
    #[test]
    fn a_retried_prompt_reads_as_no_prompt() {
        let keyed = |id: i64| {
            let prompt =
                v2::PromptRequest::new("s", vec![text("q")]).idempotency_key(v2::IdempotencyKey::new("k").unwrap());
            request(id, "session/prompt", prompt)
        };
        let mut transcript = connected();
        transcript.push(keyed(2));
        transcript.push(result(2, v2::PromptResponse::new("u2")));
        transcript.push(idle(v2::StopReason::EndTurn));
        transcript.extend([keyed(3), result(3, v2::PromptResponse::new("u2"))]);
        let read = v1_reading(&transcript);
        assert_eq!(
            read[7]["note"],
            "v2: the retry of a prompt already inserted (its idempotencyKey), no prompt of its own"
        );
        assert_eq!(read[8]["note"], "v2: the retry of a prompt already inserted, answered");
        assert_eq!(exchanges(&read).len(), 1);
    }

    /// A resume with `replayFrom` is v1's load: its replayed messages are chunks, its idle
    /// snapshot a note; a plan of items is v1's whole-list `plan`.
    #[test]
    fn a_resume_replay_reads_as_a_load() {
        let resume =
            v2::ResumeSessionRequest::new("s", "/w").replay_from(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
        let entry = v2::PlanEntry::new("step", v2::PlanEntryPriority::High, v2::PlanEntryStatus::Pending);
        let plan = v2::PlanUpdate::new(v2::PlanUpdateContent::Items(v2::PlanItems::new("p", vec![entry])));
        let mut transcript = connected();
        transcript.truncate(2);
        transcript.extend([
            request(1, "session/resume", resume),
            update(v2::SessionUpdate::UserMessage(v2::UserMessage::new("u2").content(vec![text("Name a prime.")]))),
            update(v2::SessionUpdate::AgentMessage(v2::AgentMessage::new("a2").content(vec![text("Seven.")]))),
            update(v2::SessionUpdate::PlanUpdate(plan)),
            idle(v2::StopReason::EndTurn),
            result(1, v2::ResumeSessionResponse::new()),
        ]);
        let read = v1_reading(&transcript);
        assert_eq!(read[2]["message"]["method"], "session/load");
        let kinds: Vec<&Value> =
            read[3..6].iter().map(|entry| &entry["message"]["params"]["update"]["sessionUpdate"]).collect();
        assert_eq!(kinds, ["user_message_chunk", "agent_message_chunk", "plan"]);
        assert_eq!(read[5]["message"]["params"]["update"]["entries"][0]["content"], "step");
        assert_eq!(read[6]["note"], "v2: idle snapshot of a resume");
    }
}
