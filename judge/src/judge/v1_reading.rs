//! The v1 reading of an ACP transcript: a transcript whose `initialize` answer negotiated
//! protocol version 2 read as the v1 transcript that says the same, so every ACP rule, written
//! for v1, judges a v2 agent unchanged.
//!
//! The reading is entry for entry: the same length and indices as the transcript, so a finding
//! that names message N names the message the agent sent. An entry with nothing to say in v1
//! becomes a note (`{"from": .., "note": ..}`, no `message`), which every reader skips.
//!
//! ACP v2 moves a prompt's end out of its answer: "Processing and completion are reported
//! through `state_update` session updates" (`PromptResponse`). So the `session/prompt` answer,
//! only an acknowledgement, is a note, and the idle `state_update` that ends the running
//! prompt's foreground work is that prompt's v1 answer. Connections that negotiated v1 are kept
//! as they are; a transcript with none that negotiated v2 is returned borrowed.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};

use crate::capture::{Capture, Reported};
use crate::judge::views;

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
    let exchanges = views::exchanges(reading);
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

/// A connection speaks v2 when the client asked for 2 (or later) and the agent answered 2: a
/// client that asked for 1 and was answered 2 goes on in 1 or leaves ("If the Client does not
/// support the version specified by the Agent in the `initialize` response, the Client SHOULD
/// close the connection").
pub(crate) fn negotiates_v2(initialize: &Value, answer: &Value) -> bool {
    let asked = initialize.pointer("/params/protocolVersion").and_then(Value::as_u64);
    let answered = answer.pointer("/result/protocolVersion").and_then(Value::as_u64);
    asked.is_some_and(|asked| asked >= 2) && answered == Some(2)
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
    echoes: Vec<String>,
    /// Each message's text so far, by message id.
    texts: HashMap<String, String>,
    /// Tool calls already created, by id.
    tool_calls: Vec<String>,
}

impl Reader {
    fn read(&mut self, entry: &Value) -> Value {
        let Some(message) = entry.get("message") else { return entry.clone() };
        let from = entry.get("from").and_then(Value::as_str).unwrap_or_default();
        if from == "client" && message["method"] == "initialize" {
            *self = Reader { initialize: Some(message.clone()), ..Reader::default() };
            return entry.clone();
        }
        if from == "agent"
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
        if message.get("error").is_some() {
            self.pending.retain(|pending| pending != id);
            return entry.clone();
        }
        let Some(acknowledged) = message.pointer("/result/messageId").and_then(Value::as_str) else {
            return note("v2: prompt acknowledged without a messageId");
        };
        self.echoes.push(acknowledged.to_owned());
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
            "user_message" if self.is_echo(update) => note("v2: the running prompt's user message echoed"),
            "user_message" | "agent_message" | "agent_thought" => self
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
        let answer = match update.get("stopReason").and_then(Value::as_str) {
            Some("error") => json!({"jsonrpc": "2.0", "id": id, "error": failure(update)}),
            Some(reason) => json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}}),
            None => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        };
        json!({"from": "agent", "message": answer, "note": "v2: idle state_update, read as the prompt's answer"})
    }

    /// A user message the agent echoes for a prompt of this connection ("Agents MUST echo the
    /// message during the live session", `PromptResponse::message_id`): its id is a prompt's,
    /// or it comes while a prompt runs outside a resume's replay (the echo may come before the
    /// acknowledgement that names it). v1 does not echo.
    fn is_echo(&mut self, update: &Value) -> bool {
        let id = update.get("messageId").and_then(Value::as_str).unwrap_or_default();
        if self.echoes.iter().any(|echo| echo == id) {
            return true;
        }
        let echo = self.resuming.is_none() && !self.pending.is_empty() && !self.texts.contains_key(id);
        if echo {
            self.echoes.push(id.to_owned());
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
        if self.tool_calls.iter().any(|known| known == id) {
            return update.clone();
        }
        self.tool_calls.push(id.to_owned());
        let mut call: serde_json::Map<String, Value> = update
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, value)| !value.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        call.insert("sessionUpdate".into(), json!("tool_call"));
        let title = update.get("name").filter(|name| name.is_string()).cloned().unwrap_or_else(|| json!(id));
        call.entry("title").or_insert(title);
        call.entry("status").or_insert(json!("pending"));
        Value::Object(call)
    }
}

/// A note entry: what the reading read, where v1 has no message for it.
fn note(what: &str) -> Value {
    json!({"from": "agent", "note": what})
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
