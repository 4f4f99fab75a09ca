//! The OpenAI Responses API streaming dialect: SSE events, in-band errors and HTTP error bodies.
//!
//! A stream is a list of content frames (from `response.created` to the last
//! `response.output_item.done`) followed by one terminal chosen by [`Ending`]. With
//! `cut_after = N` only the first N content frames are sent; a terminal `response.completed`
//! or `response.incomplete` after a cut lists only the items whose `output_item.done` was sent.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Answer, Asked, Beat, EncodeContext, Encoder, Step, error_answer, play, sse_answer};
use crate::conversation::{Conversation, Message, ViewError, content_text};
use crate::script::{Ending, Reasoning, Response, Usage};

/// `created_at` of every response, fixed so bytes are deterministic.
pub const CREATED_AT: u64 = 1_700_000_000;
/// The single frame sent for [`Ending::Malformed`].
pub const MALFORMED_FRAME: &[u8] = b"event: response.output_text.delta\ndata: {not json\n\n";

/// One SSE event before numbering; `done` holds the finished item of an `output_item.done`.
struct Event {
    kind: &'static str,
    data: Value,
    done: Option<Value>,
}

impl Event {
    fn new(kind: &'static str, data: Value) -> Self {
        Self { kind, data, done: None }
    }

    fn item_done(output_index: usize, item: Value) -> Self {
        let data = json!({ "output_index": output_index, "item": item });
        Self { kind: "response.output_item.done", data, done: Some(item) }
    }

    fn sse(self, sequence_number: usize) -> Bytes {
        let data = merge(self.data, json!({ "type": self.kind, "sequence_number": sequence_number }));
        Bytes::from(format!("event: {}\ndata: {data}\n\n", self.kind))
    }
}

/// Whether `path` is the Responses endpoint.
pub fn serves(path: &str) -> bool {
    path == "/v1/responses"
}

/// The request body's `model`.
pub fn model(asked: &Asked<'_>) -> Option<String> {
    asked.body.field("model")?.as_str().map(str::to_owned)
}

/// The answer to a request: the HTTP error the script gives, or the SSE stream.
pub fn answer(response: &Response, ctx: &EncodeContext, _asked: &Asked<'_>) -> Answer {
    match response.status {
        Some(status) => error_answer(status, response.retry_after, http_error_json(status)),
        None => sse_answer(encode(response, ctx)),
    }
}

/// Encodes one scripted response as a Responses API SSE stream.
pub fn encode(response: &Response, ctx: &EncodeContext) -> Vec<Step> {
    play(response, &mut Writer { response, ctx, sequence: 0, output: Vec::new() })
}

/// The Responses encoder: numbers its events and keeps the finished items for the terminal.
struct Writer<'a> {
    response: &'a Response,
    ctx: &'a EncodeContext,
    sequence: usize,
    /// Items whose `output_item.done` was sent: what a terminal lists.
    output: Vec<Value>,
}

impl Writer<'_> {
    fn send(&mut self, event: Event) -> Vec<Bytes> {
        if let Some(item) = &event.done {
            self.output.push(item.clone());
        }
        self.sequence += 1;
        vec![event.sse(self.sequence - 1)]
    }

    /// The output index of the message, and of call `index`.
    fn message_index(&self) -> usize {
        self.response.reasoning.len()
    }

    fn call_index(&self, index: usize) -> usize {
        self.message_index() + usize::from(!self.response.text.is_empty()) + index
    }
}

/// Where a reasoning summary event of output `index` belongs: its item, output and part.
fn reasoning_at(ctx: &EncodeContext, index: usize) -> Value {
    json!({ "item_id": format!("rs_{}", ctx.item_base + index), "output_index": index, "summary_index": 0 })
}

/// A reasoning summary part holding `text`.
fn summary_part(text: &str) -> Value {
    json!({ "type": "summary_text", "text": text })
}

/// The finished reasoning item of output `index`, with its encrypted content when scripted.
fn reasoning_item(ctx: &EncodeContext, index: usize, reasoning: &Reasoning) -> Value {
    let id = format!("rs_{}", ctx.item_base + index);
    let item = json!({ "type": "reasoning", "id": id, "summary": [summary_part(&reasoning.summary.concat())] });
    match &reasoning.encrypted {
        Some(encrypted) => merge(item, json!({ "encrypted_content": encrypted })),
        None => item,
    }
}

/// The message's content part holding `text`. A refusal is the message's `refusal` part,
/// streamed as `response.refusal.*` events.
fn message_part(refuses: bool, text: &str) -> Value {
    match refuses {
        true => json!({ "type": "refusal", "refusal": text }),
        false => json!({ "type": "output_text", "text": text, "annotations": [] }),
    }
}

impl Encoder for Writer<'_> {
    fn beat(&mut self, beat: &Beat<'_>) -> Vec<Bytes> {
        let ctx = self.ctx;
        let shell = || json!({ "response": response_object(ctx, "in_progress", Vec::new()) });
        let message_index = self.message_index();
        let message_id = format!("msg_{}", ctx.item_base + message_index);
        let text_at = json!({ "item_id": message_id, "output_index": message_index, "content_index": 0 });
        let text = self.response.message().concat();
        let refuses = self.response.refuses();
        let part = |text: &str| message_part(refuses, text);
        let message = |status: &str, content: Value| json!({ "type": "message", "id": message_id, "role": "assistant", "status": status, "content": content });
        let event = match *beat {
            Beat::Created => Event::new("response.created", shell()),
            Beat::InProgress => Event::new("response.in_progress", shell()),
            Beat::ReasoningAdded { index, .. } => {
                let added =
                    json!({ "type": "reasoning", "id": format!("rs_{}", ctx.item_base + index), "summary": [] });
                Event::new("response.output_item.added", json!({ "output_index": index, "item": added }))
            }
            Beat::ReasoningPartAdded { index } => scoped(
                "response.reasoning_summary_part.added",
                &reasoning_at(ctx, index),
                json!({ "part": summary_part("") }),
            ),
            Beat::ReasoningDelta { index, delta } => {
                scoped("response.reasoning_summary_text.delta", &reasoning_at(ctx, index), json!({ "delta": delta }))
            }
            Beat::ReasoningTextDone { index, reasoning } => {
                let done = json!({ "text": reasoning.summary.concat() });
                scoped("response.reasoning_summary_text.done", &reasoning_at(ctx, index), done)
            }
            Beat::ReasoningPartDone { index, reasoning } => {
                let done = json!({ "part": summary_part(&reasoning.summary.concat()) });
                scoped("response.reasoning_summary_part.done", &reasoning_at(ctx, index), done)
            }
            Beat::ReasoningDone { index, reasoning } => Event::item_done(index, reasoning_item(ctx, index, reasoning)),
            Beat::MessageAdded => {
                let added = json!({ "output_index": message_index, "item": message("in_progress", json!([])) });
                Event::new("response.output_item.added", added)
            }
            Beat::TextPartAdded => scoped("response.content_part.added", &text_at, json!({ "part": part("") })),
            Beat::TextDelta(delta) if refuses => scoped("response.refusal.delta", &text_at, json!({ "delta": delta })),
            Beat::TextDelta(delta) => {
                scoped("response.output_text.delta", &text_at, json!({ "delta": delta, "logprobs": [] }))
            }
            Beat::TextDone if refuses => scoped("response.refusal.done", &text_at, json!({ "refusal": text })),
            Beat::TextDone => scoped("response.output_text.done", &text_at, json!({ "text": text })),
            Beat::TextPartDone => scoped("response.content_part.done", &text_at, json!({ "part": part(&text) })),
            Beat::MessageDone => Event::item_done(message_index, message("completed", json!([part(&text)]))),
            Beat::CallAdded { index, call } => {
                let item = self.call_item(index, call, "", "in_progress");
                Event::new(
                    "response.output_item.added",
                    json!({ "output_index": self.call_index(index), "item": item }),
                )
            }
            Beat::ArgsDelta { index, delta } => {
                let at = self.call_at(index);
                scoped("response.function_call_arguments.delta", &at, json!({ "delta": delta }))
            }
            Beat::ArgsDone { index, call } => {
                let at = self.call_at(index);
                scoped("response.function_call_arguments.done", &at, json!({ "arguments": call.arguments() }))
            }
            Beat::CallDone { index, call } => {
                Event::item_done(self.call_index(index), self.call_item(index, call, &call.arguments(), "completed"))
            }
        };
        self.send(event)
    }

    fn end(&mut self, ending: &Ending, _cut: bool) -> Vec<Bytes> {
        let (ctx, output) = (self.ctx, self.output.clone());
        let usage = usage_json(self.response.effective_usage());
        let terminal = match ending {
            Ending::Completed => {
                let body = merge(response_object(ctx, "completed", output), json!({ "usage": usage }));
                Event::new("response.completed", json!({ "response": body }))
            }
            Ending::Incomplete(reason) => {
                let patch = json!({ "usage": usage, "incomplete_details": { "reason": reason } });
                let body = merge(response_object(ctx, "incomplete", output), patch);
                Event::new("response.incomplete", json!({ "response": body }))
            }
            Ending::Failed(code) => {
                let patch = json!({ "error": { "code": code, "message": error_message(code) } });
                let body = merge(response_object(ctx, "failed", output), patch);
                Event::new("response.failed", json!({ "response": body }))
            }
            Ending::Error(code) => {
                Event::new("error", json!({ "code": code, "message": error_message(code), "param": null }))
            }
            Ending::Disconnect | Ending::Eof | Ending::Malformed => return Vec::new(),
        };
        self.send(terminal)
    }

    fn malformed(&self) -> Bytes {
        Bytes::from_static(MALFORMED_FRAME)
    }
}

impl Writer<'_> {
    fn call_at(&self, index: usize) -> Value {
        let n = self.ctx.item_base + self.call_index(index);
        json!({ "item_id": format!("fc_{n}"), "output_index": self.call_index(index) })
    }

    fn call_item(&self, index: usize, call: &crate::script::Call, arguments: &str, status: &str) -> Value {
        let n = self.ctx.item_base + self.call_index(index);
        let mut item = json!({ "type": "function_call", "id": format!("fc_{n}"), "call_id": self.ctx.call_id(self.response, index),
                "name": call.name, "arguments": arguments, "status": status });
        if let Some(namespace) = &call.namespace {
            item["namespace"] = json!(namespace);
        }
        item
    }
}

/// An event about one item: `at` (item id, output index, part index) plus `extra`.
fn scoped(kind: &'static str, at: &Value, extra: Value) -> Event {
    Event::new(kind, merge(at.clone(), extra))
}

/// Reads a Responses request body: `instructions`, and `input` (a string, or items: messages
/// by role, `function_call`, `function_call_output`, `reasoning`).
pub fn read(body: &Value) -> Result<Conversation, ViewError> {
    let object = body.as_object().ok_or_else(|| ViewError("the body is not a JSON object".to_owned()))?;
    let mut conversation = Conversation {
        model: object.get("model").and_then(Value::as_str).map(str::to_owned),
        system: object.get("instructions").and_then(Value::as_str).map(str::to_owned).into_iter().collect(),
        messages: Vec::new(),
    };
    let items = match object.get("input") {
        Some(Value::String(text)) => {
            conversation.messages.push(Message::User { text: text.clone() });
            return Ok(conversation);
        }
        Some(Value::Array(items)) => items,
        None => return Ok(conversation),
        Some(_) => return Err(ViewError("`input` is neither a string nor an array".to_owned())),
    };
    for item in items {
        let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
        let message = match (kind, item.get("role").and_then(Value::as_str)) {
            ("message", Some("user")) => {
                conversation.messages.push(Message::User { text: content_text(item.get("content")) });
                // Its `input_image` parts follow its text.
                let parts = item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                for part in parts.iter().filter(|part| part.get("type").and_then(Value::as_str) == Some("input_image"))
                {
                    let url = match part.get("image_url") {
                        Some(Value::String(url)) => url.clone(),
                        other => {
                            other.and_then(|url| url.get("url")).and_then(Value::as_str).unwrap_or_default().to_owned()
                        }
                    };
                    conversation.messages.push(Message::Image { url });
                }
                continue;
            }
            ("message", Some("assistant")) => Message::Assistant { text: content_text(item.get("content")) },
            ("message", Some("system" | "developer")) => {
                conversation.system.push(content_text(item.get("content")));
                continue;
            }
            ("function_call", _) => Message::ToolCall {
                call_id: field("call_id"),
                name: field("name"),
                args: item.get("arguments").cloned().unwrap_or(Value::Null),
            },
            ("function_call_output", _) => Message::ToolResult {
                call_id: field("call_id"),
                output: match item.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    other => content_text(other),
                },
            },
            ("reasoning", _) => Message::Reasoning {
                text: item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|parts| parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect())
                    .unwrap_or_default(),
                opaque: item.get("encrypted_content").and_then(Value::as_str).map(str::to_owned),
            },
            (kind, role) => {
                Message::Other { kind: role.map_or_else(|| kind.to_owned(), |role| format!("{kind}:{role}")) }
            }
        };
        conversation.messages.push(message);
    }
    Ok(conversation)
}

/// The full response object with empty usage, error and incomplete details.
fn response_object(ctx: &EncodeContext, status: &str, output: Vec<Value>) -> Value {
    json!({
        "id": ctx.response_id, "object": "response", "created_at": CREATED_AT, "status": status,
        "model": ctx.model, "output": output, "usage": null, "error": null,
        "incomplete_details": null, "instructions": null, "max_output_tokens": null,
        "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": { "effort": null, "summary": null }, "store": false, "temperature": 1.0,
        "text": { "format": { "type": "text" } }, "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "truncation": "disabled", "user": null, "metadata": {},
    })
}

fn usage_json(u: Usage) -> Value {
    json!({
        "input_tokens": u.input, "input_tokens_details": { "cached_tokens": u.cached },
        "output_tokens": u.output, "output_tokens_details": { "reasoning_tokens": u.reasoning },
        "total_tokens": u.input.saturating_add(u.output),
    })
}

/// Adds the keys of `patch` to the object `base`.
fn merge(mut base: Value, patch: Value) -> Value {
    if let (Value::Object(base), Value::Object(patch)) = (&mut base, patch) {
        base.extend(patch);
    }
    base
}

/// The provider's message for an error code.
pub fn error_message(code: &str) -> String {
    let message = match code {
        "server_error" => "The server had an error while processing your request.",
        "rate_limit_exceeded" => "Rate limit reached for requests. Please try again later.",
        "server_is_overloaded" | "service_unavailable" => {
            "The server is currently overloaded with other requests. Please try again later."
        }
        "context_length_exceeded" => "Your input exceeds the context window of this model.",
        "insufficient_quota" => "You exceeded your current quota, please check your plan and billing details.",
        "invalid_prompt" => "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
        "invalid_api_key" => "Incorrect API key provided.",
        other => return format!("The provider reported an error ({other})."),
    };
    message.to_owned()
}

/// The provider-shaped JSON error body answered with an HTTP error `status`.
pub fn http_error_json(status: u16) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500 => ("server_error", Some("server_error")),
        502 | 503 => ("service_unavailable", Some("server_is_overloaded")),
        _ if status >= 500 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    let message = match (status, code) {
        (400, _) => "Invalid request.".to_owned(),
        (_, Some(code)) => error_message(code),
        _ => format!("The provider returned HTTP {status}."),
    };
    json!({ "error": { "message": message, "type": kind, "param": null, "code": code } })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Call, Pause, Reasoning};

    #[test]
    fn a_user_messages_images_follow_its_text() {
        let body = json!({ "input": [{ "role": "user", "content": [
            { "type": "input_text", "text": "Look" },
            { "type": "input_image", "image_url": "data:image/png;base64,iVBO" },
        ]}]});
        assert_eq!(
            read(&body).unwrap().messages,
            [Message::User { text: "Look".into() }, Message::Image { url: "data:image/png;base64,iVBO".into() }]
        );
    }

    fn ctx() -> EncodeContext {
        EncodeContext { response_id: "resp_1".into(), model: "m".into(), item_base: 5 }
    }

    /// Parses every byte step back into (event without `response.`, data); checks framing and numbering.
    fn events(steps: &[Step]) -> Vec<(String, Value)> {
        let frames =
            steps.iter().filter_map(|s| if let Step::Bytes(b) = s { std::str::from_utf8(b).ok() } else { None });
        let parse = |(i, frame): (usize, &str)| {
            let (event, data) = frame.strip_suffix("\n\n").unwrap().split_once('\n').unwrap();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            let event = event.strip_prefix("event: ").unwrap();
            assert_eq!((&data["type"], &data["sequence_number"]), (&json!(event), &json!(i)));
            (event.trim_start_matches("response.").to_owned(), data)
        };
        frames.enumerate().map(parse).collect()
    }

    fn kinds(events: &[(String, Value)]) -> String {
        events.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(" ")
    }

    fn joined(events: &[(String, Value)], kind: &str) -> String {
        events.iter().filter(|(k, _)| k == kind).map(|(_, d)| d["delta"].as_str().unwrap()).collect()
    }

    fn text(then: Ending) -> Response {
        Response { text: vec!["Hel".into(), "lo".into()], then, ..Response::default() }
    }

    #[test]
    fn text_stream_has_the_real_sequence() {
        let events = events(&encode(&text(Ending::Completed), &ctx()));
        let expected = "created in_progress output_item.added content_part.added output_text.delta \
                        output_text.delta output_text.done content_part.done output_item.done completed";
        assert_eq!(kinds(&events), expected);
        assert_eq!(joined(&events, "output_text.delta"), "Hello");
        assert_eq!(events[6].1["text"], "Hello");
        assert_eq!(events[2].1["item"]["id"], "msg_5");
        let done = &events[9].1["response"];
        assert_eq!((&done["status"], &done["model"]), (&json!("completed"), &json!("m")));
        assert_eq!(done["output"][0]["content"][0]["text"], "Hello");
        assert_eq!((&done["usage"]["input_tokens"], &done["usage"]["total_tokens"]), (&json!(100), &json!(110)));
    }

    /// A refusal is the message's `refusal` content part, streamed as `response.refusal.delta`
    /// and `response.refusal.done`, and the response completes.
    #[test]
    fn a_refusal_is_a_refusal_part() {
        let events = events(&encode(
            &Response { refusal: vec!["I can't ".into(), "help.".into()], ..Response::default() },
            &ctx(),
        ));
        assert_eq!(joined(&events, "refusal.delta"), "I can't help.");
        assert!(joined(&events, "output_text.delta").is_empty());
        let done = events.iter().find(|(kind, _)| kind == "refusal.done").unwrap();
        assert_eq!(done.1["refusal"], "I can't help.");
        let last = events.last().unwrap();
        assert_eq!(last.0, "completed");
        assert_eq!(
            last.1["response"]["output"][0]["content"],
            json!([{ "type": "refusal", "refusal": "I can't help." }])
        );
    }

    /// A call's raw argument text goes out in the deltas, the `.done` event and the finished
    /// item as written, and the response still completes.
    #[test]
    fn raw_arguments_go_out_as_written() {
        let raw = Call { name: "read".into(), raw_args: Some(r#"{"path": "a"#.into()), ..Call::default() };
        let events = events(&encode(&Response { calls: vec![raw], ..Response::default() }, &ctx()));
        assert_eq!(joined(&events, "function_call_arguments.delta"), r#"{"path": "a"#);
        let done = &events.last().unwrap();
        assert_eq!(done.0, "completed");
        assert_eq!(done.1["response"]["output"][0]["arguments"], r#"{"path": "a"#);
    }

    #[test]
    fn reasoning_and_calls_with_usage() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["thi".into(), "nk".into()], encrypted: Some("opaque".into()) }],
            calls: vec![Call {
                name: "shell".into(),
                args: json!({ "b": 1, "a": "x" }),
                call_id: None,
                raw_args: None,
                ..Call::default()
            }],
            usage: Some(Usage { input: 7, cached: 3, output: 5, reasoning: 2 }),
            ..Response::default()
        };
        let events = events(&encode(&response, &ctx()));
        let arguments = joined(&events, "function_call_arguments.delta");
        assert_eq!(arguments, r#"{"b":1,"a":"x"}"#, "arguments keep the order the script wrote");
        assert_eq!(joined(&events, "reasoning_summary_text.delta"), "think");
        let done = &events.last().unwrap().1["response"];
        let (reasoning, call) = (&done["output"][0], &done["output"][1]);
        assert_eq!((&reasoning["id"], &reasoning["encrypted_content"]), (&json!("rs_5"), &json!("opaque")));
        assert_eq!(reasoning["summary"][0]["text"], "think");
        assert_eq!(
            (&call["id"], &call["call_id"], &call["arguments"]),
            (&json!("fc_6"), &json!("call_6"), &json!(arguments))
        );
        let usage = &done["usage"];
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], 3);
        assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 2);
        assert_eq!(usage["total_tokens"], 12);
    }

    #[test]
    fn endings() {
        let last = |then| events(&encode(&text(then), &ctx())).pop().unwrap();
        let (kind, data) = last(Ending::Error("server_error".into()));
        assert_eq!((kind.as_str(), &data["code"]), ("error", &json!("server_error")));
        assert_eq!(data["message"], "The server had an error while processing your request.");
        let (kind, data) = last(Ending::Failed("rate_limit_exceeded".into()));
        assert_eq!((kind.as_str(), &data["response"]["status"]), ("failed", &json!("failed")));
        assert_eq!(data["response"]["error"]["code"], "rate_limit_exceeded");
        let (kind, data) = last(Ending::Incomplete("max_output_tokens".into()));
        assert_eq!(
            (kind.as_str(), &data["response"]["incomplete_details"]["reason"]),
            ("incomplete", &json!("max_output_tokens"))
        );
        assert_eq!(last(Ending::Eof).0, "output_item.done");

        let steps = encode(&text(Ending::Disconnect), &ctx());
        assert_eq!(steps.last(), Some(&Step::Abort));
        assert_eq!(events(&steps).last().unwrap().0, "output_item.done");
        let steps = encode(&text(Ending::Malformed), &ctx());
        assert_eq!(steps.last(), Some(&Step::Bytes(Bytes::from_static(MALFORMED_FRAME))));
        assert_eq!(events(&steps[..steps.len() - 1]).len(), 9);
    }

    #[test]
    fn cut_and_pause_placement() {
        let cut = Response { cut_after: Some(5), ..text(Ending::Error("server_error".into())) };
        assert!(
            kinds(&events(&encode(&cut, &ctx())))
                .ends_with("output_item.added content_part.added output_text.delta error")
        );
        let cut = Response { cut_after: Some(3), ..text(Ending::Completed) };
        assert_eq!(events(&encode(&cut, &ctx())).pop().unwrap().1["response"]["output"], json!([]));

        let paused = Response { pause: vec![Pause { after: 2, ms: 600_000 }], ..text(Ending::Disconnect) };
        let steps = encode(&paused, &ctx());
        assert_eq!(steps[2], Step::Pause(std::time::Duration::from_secs(600)));
        assert!(matches!(steps[1], Step::Bytes(_)) && matches!(steps[3], Step::Bytes(_)));
        let late = Response { pause: vec![Pause { after: 99, ms: 1 }], ..text(Ending::Disconnect) };
        let steps = encode(&late, &ctx());
        assert!(matches!(steps[steps.len() - 2..], [Step::Pause(_), Step::Abort]));
    }

    #[test]
    fn http_error_bodies() {
        let error = |status| http_error_json(status)["error"].clone();
        assert_eq!((&error(429)["type"], &error(429)["code"]), (&json!("requests"), &json!("rate_limit_exceeded")));
        assert_eq!(error(503)["code"], "server_is_overloaded");
        assert_eq!(error(418)["message"], "The provider returned HTTP 418.");
    }
}
