//! The Anthropic Messages dialect (`POST /v1/messages`): the SSE event stream, the
//! non-streaming answer, in-band `error` events and HTTP error bodies (docs/dialects.md).
//!
//! A stream is `message_start`, `ping`, then one content block per reasoning item
//! (`thinking`: `thinking_delta`s, then a `signature_delta` when the script gives `encrypted`),
//! one `text` block (`text_delta`s) and one `tool_use` block per call (`input_json_delta`
//! fragments), each opened by `content_block_start` and closed by `content_block_stop`; then
//! `message_delta` (`stop_reason`, usage) and `message_stop`. `cut_after` and `pause` count
//! Responses frames (see [`super::play`]), so every dialect cuts the same answer at the same
//! point.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    Answer, Asked, Beat, EncodeContext, Encoder, Step, beats, error_answer, play, responses, sse_answer, whole_answer,
};
use crate::conversation::{Conversation, Message, ViewError};
use crate::script::{Ending, Response, Usage};

/// The single frame sent for [`Ending::Malformed`].
pub const MALFORMED_FRAME: &[u8] = b"event: content_block_delta\ndata: {not json\n\n";

/// True for the Messages endpoint.
pub fn serves(path: &str) -> bool {
    path == "/v1/messages"
}

/// The model a request names in its body.
pub fn model(asked: &Asked<'_>) -> Option<String> {
    asked.body.field("model")?.as_str().map(str::to_owned)
}

/// The whole answer: the HTTP error a script's `status` asks for, the stream, or the
/// non-streaming `Message` when the request says `stream: false`.
pub fn answer(response: &Response, ctx: &EncodeContext, asked: &Asked<'_>) -> Answer {
    match response.status {
        Some(status) => error_answer(status, response.retry_after, http_error_json(status)),
        None if asked.body.field("stream").and_then(|stream| stream.as_bool()) != Some(true) => whole(response, ctx),
        None => sse_answer(encode(response, ctx)),
    }
}

/// One event as its SSE frame: the event name is the `type` of its data.
fn sse(data: &Value) -> Bytes {
    let kind = data["type"].as_str().unwrap_or_default();
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// The message id of a response: `msg_` and the provider's response number.
fn message_id(ctx: &EncodeContext) -> String {
    format!("msg_{}", ctx.response_id.trim_start_matches("resp_"))
}

/// Encodes one scripted response as a Messages API SSE stream.
pub fn encode(response: &Response, ctx: &EncodeContext) -> Vec<Step> {
    play(response, &mut Writer { response, ctx, block: 0, tools_sent: false })
}

/// The Messages encoder: numbers content blocks, and notes whether a `tool_use` block was
/// finished (the `stop_reason` is then `tool_use`).
struct Writer<'a> {
    response: &'a Response,
    ctx: &'a EncodeContext,
    block: usize,
    tools_sent: bool,
}

impl Writer<'_> {
    fn start(&self, content_block: Value) -> Vec<Bytes> {
        vec![sse(&json!({ "type": "content_block_start", "index": self.block, "content_block": content_block }))]
    }

    fn delta(&self, delta: Value) -> Bytes {
        sse(&json!({ "type": "content_block_delta", "index": self.block, "delta": delta }))
    }

    fn stop(&mut self) -> Bytes {
        self.block += 1;
        sse(&json!({ "type": "content_block_stop", "index": self.block - 1 }))
    }
}

impl Encoder for Writer<'_> {
    fn beat(&mut self, beat: &Beat<'_>) -> Vec<Bytes> {
        match *beat {
            Beat::Created => vec![sse(&message_start(self.ctx, self.response.effective_usage()))],
            Beat::InProgress => vec![sse(&json!({ "type": "ping" }))],
            Beat::ReasoningAdded { .. } => self.start(json!({ "type": "thinking", "thinking": "", "signature": "" })),
            Beat::ReasoningDelta { delta, .. } => {
                vec![self.delta(json!({ "type": "thinking_delta", "thinking": delta }))]
            }
            Beat::ReasoningDone { reasoning, .. } => {
                let signature = reasoning
                    .encrypted
                    .as_ref()
                    .map(|sig| self.delta(json!({ "type": "signature_delta", "signature": sig })));
                signature.into_iter().chain([self.stop()]).collect()
            }
            Beat::MessageAdded => self.start(json!({ "type": "text", "text": "" })),
            Beat::TextDelta(delta) => vec![self.delta(json!({ "type": "text_delta", "text": delta }))],
            Beat::MessageDone => vec![self.stop()],
            Beat::CallAdded { index, call } => {
                let id = self.ctx.call_id(self.response, index);
                self.start(json!({ "type": "tool_use", "id": id, "name": call.name, "input": {} }))
            }
            Beat::ArgsDelta { delta, .. } => {
                vec![self.delta(json!({ "type": "input_json_delta", "partial_json": delta }))]
            }
            Beat::CallDone { .. } => {
                self.tools_sent = true;
                vec![self.stop()]
            }
            Beat::ReasoningPartAdded { .. }
            | Beat::ReasoningTextDone { .. }
            | Beat::ReasoningPartDone { .. }
            | Beat::TextPartAdded
            | Beat::TextDone
            | Beat::TextPartDone
            | Beat::ArgsDone { .. } => Vec::new(),
        }
    }

    fn end(&mut self, ending: &Ending, _cut: bool) -> Vec<Bytes> {
        match ending {
            Ending::Completed | Ending::Incomplete(_) => {
                let delta = json!({
                    "type": "message_delta",
                    "delta": { "stop_reason": stop_reason(&self.response.stop_of(ending), self.tools_sent), "stop_sequence": null },
                    "usage": usage_json(self.response.effective_usage()),
                });
                vec![sse(&delta), sse(&json!({ "type": "message_stop" }))]
            }
            Ending::Error(code) | Ending::Failed(code) => vec![sse(&error_event(code))],
            Ending::Eof | Ending::Malformed | Ending::Disconnect => Vec::new(),
        }
    }

    fn malformed(&self) -> Bytes {
        Bytes::from_static(MALFORMED_FRAME)
    }
}

/// The non-streaming answer (`stream: false`): the whole `Message` object, with the blocks a
/// cut left complete, through [`whole_answer`]; an error code is HTTP 529 when it means an
/// overload, else 500.
fn whole(response: &Response, ctx: &EncodeContext) -> Answer {
    let arguments = super::arguments(response);
    let all = beats(response, &arguments);
    let shown = response.cut_after.map_or(all.len(), |cut| cut.min(all.len()));
    let mut content = Vec::new();
    let mut tools_done = false;
    for beat in &all[..shown] {
        match *beat {
            Beat::ReasoningDone { reasoning, .. } => {
                let signature = reasoning.encrypted.clone().unwrap_or_default();
                content.push(
                    json!({ "type": "thinking", "thinking": reasoning.summary.concat(), "signature": signature }),
                );
            }
            Beat::MessageDone => content.push(json!({ "type": "text", "text": response.message().concat() })),
            Beat::CallDone { index, call } => {
                tools_done = true;
                content.push(json!({ "type": "tool_use", "id": ctx.call_id(response, index), "name": call.name, "input": call.args_value() }));
            }
            _ => {}
        }
    }
    let message = json!({
        "id": message_id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
        "content": content, "stop_reason": stop_reason(&response.stop_of(&response.then), tools_done), "stop_sequence": null,
        "usage": usage_json(response.effective_usage()),
    });
    whole_answer(response, message, |code| {
        let status = if error_type(code) == "overloaded_error" { 529 } else { 500 };
        (status, error_json(status, error_type(code), &responses::error_message(code)))
    })
}

fn message_start(ctx: &EncodeContext, usage: Usage) -> Value {
    json!({
        "type": "message_start",
        "message": {
            "id": message_id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input.saturating_sub(usage.cached),
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cached,
                "output_tokens": 1,
            },
        },
    })
}

/// The `stop_reason` of a clean ending: `refusal` for a content filter, `max_tokens` for any
/// other early stop, `tool_use` when a call was sent, else `end_turn`.
fn stop_reason(then: &Ending, tools_done: bool) -> &'static str {
    match then {
        Ending::Incomplete(reason) if reason == "content_filter" => "refusal",
        Ending::Incomplete(_) => "max_tokens",
        _ if tools_done => "tool_use",
        _ => "end_turn",
    }
}

/// The Messages usage of the scripted usage: `input_tokens` excludes the cache read (the
/// three input counts add up to the prompt), and thinking tokens are in `output_tokens`,
/// broken out in `output_tokens_details.thinking_tokens`.
fn usage_json(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input.saturating_sub(usage.cached),
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cached,
        "output_tokens": usage.output,
        "output_tokens_details": { "thinking_tokens": usage.reasoning },
    })
}

/// The Messages `error.type` a script's error code stands for.
pub fn error_type(code: &str) -> &'static str {
    match code {
        "rate_limit_exceeded" => "rate_limit_error",
        "server_is_overloaded" | "service_unavailable" => "overloaded_error",
        "invalid_prompt" | "context_length_exceeded" => "invalid_request_error",
        "invalid_api_key" => "authentication_error",
        "insufficient_quota" => "billing_error",
        _ => "api_error",
    }
}

/// The in-band `error` event for a script's error code.
fn error_event(code: &str) -> Value {
    json!({ "type": "error", "error": { "type": error_type(code), "message": responses::error_message(code) } })
}

fn error_json(status: u16, kind: &str, message: &str) -> Value {
    json!({ "type": "error", "error": { "type": kind, "message": message }, "request_id": format!("req_{status}") })
}

/// The error body answered with an HTTP error `status` (`retry-after` goes in a header). Its
/// message is the Responses body's, so every dialect says the same.
pub fn http_error_json(status: u16) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ if status >= 500 => "api_error",
        _ => "invalid_request_error",
    };
    let message = responses::http_error_json(status)["error"]["message"].as_str().unwrap_or_default().to_owned();
    error_json(status, kind, &message)
}

/// A Messages request body read into the dialect-neutral [`Conversation`]: `system` (a string
/// or text blocks), then each message's blocks in order: text, `thinking` /
/// `redacted_thinking` (reasoning with its signature or data), `tool_use`, `tool_result` (its
/// text content joined), `image` (as a `data:` URL), anything else by its type.
///
/// Consecutive text blocks of an assistant message are one answer (a client may keep the
/// pieces it streamed), but each text block of a user message is one user message: roles
/// must alternate, so consecutive user messages (a prompt after a notice) share one `user`
/// message as separate blocks.
pub fn read(body: &Value) -> Result<Conversation, ViewError> {
    let body = body.as_object().ok_or_else(|| ViewError("a Messages request body is a JSON object".to_owned()))?;
    let system = read_system(body.get("system"))?;
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| ViewError("`messages` is missing or not an array".to_owned()))?;
    let mut read = Vec::new();
    for message in messages {
        let assistant = match message.get("role").and_then(Value::as_str) {
            Some("assistant") => true,
            Some("user") => false,
            other => return Err(ViewError(format!("a message with role {other:?}: expected user or assistant"))),
        };
        let said = |text: String| if assistant { Message::Assistant { text } } else { Message::User { text } };
        let blocks = match message.get("content") {
            Some(Value::String(text)) => {
                read.push(said(text.clone()));
                continue;
            }
            Some(Value::Array(blocks)) => blocks,
            _ => return Err(ViewError("a message `content` is neither a string nor blocks".to_owned())),
        };
        let mut text: Option<String> = None;
        for block in blocks {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
            if kind == "text" {
                if !assistant && let Some(text) = text.take() {
                    read.push(said(text));
                }
                text.get_or_insert_with(String::new).push_str(block["text"].as_str().unwrap_or_default());
                continue;
            }
            if let Some(text) = text.take() {
                read.push(said(text));
            }
            read.push(read_block(block, kind));
        }
        if let Some(text) = text {
            read.push(said(text));
        }
    }
    let model = body.get("model").and_then(Value::as_str).map(str::to_owned);
    Ok(Conversation { model, system, messages: read })
}

/// The `system` of a Messages body: a string, or the texts of its blocks.
fn read_system(system: Option<&Value>) -> Result<Vec<String>, ViewError> {
    match system {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![text.clone()]),
        Some(Value::Array(blocks)) => {
            Ok(blocks.iter().filter_map(|block| block.get("text")?.as_str().map(str::to_owned)).collect())
        }
        Some(other) => Err(ViewError(format!("`system` is neither a string nor blocks: {other}"))),
    }
}

/// A message block other than text, of type `kind`, as the message it stands for.
fn read_block(block: &Value, kind: &str) -> Message {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    match kind {
        "thinking" => Message::Reasoning {
            text: field("thinking"),
            opaque: block.get("signature").and_then(Value::as_str).map(str::to_owned),
        },
        "redacted_thinking" => Message::Reasoning {
            text: String::new(),
            opaque: block.get("data").and_then(Value::as_str).map(str::to_owned),
        },
        "tool_use" => Message::ToolCall {
            call_id: field("id"),
            name: field("name"),
            args: block.get("input").cloned().unwrap_or(Value::Null),
        },
        // A base64 source as its `data:` URL, a `url` source as its URL.
        "image" => Message::Image {
            url: match block.pointer("/source/type").and_then(Value::as_str) {
                Some("base64") => crate::conversation::data_url(
                    block.pointer("/source/media_type").and_then(Value::as_str).unwrap_or_default(),
                    block.pointer("/source/data").and_then(Value::as_str).unwrap_or_default(),
                ),
                _ => block.pointer("/source/url").and_then(Value::as_str).unwrap_or_default().to_owned(),
            },
        },
        "tool_result" => Message::ToolResult {
            call_id: field("tool_use_id"),
            output: crate::conversation::content_text(block.get("content")),
        },
        other => Message::Other { kind: other.to_owned() },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::script::{Call, Pause, Reasoning};

    fn ctx() -> EncodeContext {
        EncodeContext { response_id: "resp_3".into(), model: "claude-x".into(), item_base: 5 }
    }

    /// Parses every frame of the byte steps into (event, data), checking the framing: the event
    /// name is the data's `type`. A step holds the frames of one beat (none, one or several).
    fn events(steps: &[Step]) -> Vec<(String, Value)> {
        steps
            .iter()
            .filter_map(|step| if let Step::Bytes(bytes) = step { std::str::from_utf8(bytes).ok() } else { None })
            .flat_map(|chunk| {
                assert!(chunk.is_empty() || chunk.ends_with("\n\n"), "a step ends between frames: {chunk:?}");
                chunk.split_terminator("\n\n")
            })
            .map(|frame| {
                let (event, data) = frame.split_once('\n').unwrap();
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                let event = event.strip_prefix("event: ").unwrap();
                assert_eq!(data["type"], event);
                (event.to_owned(), data)
            })
            .collect()
    }

    fn kinds(events: &[(String, Value)]) -> Vec<String> {
        events
            .iter()
            .map(|(kind, data)| match data["delta"]["type"].as_str() {
                Some(delta) if kind == "content_block_delta" => delta.to_owned(),
                _ => kind.clone(),
            })
            .collect()
    }

    fn text(then: Ending) -> Response {
        Response { text: vec!["Hel".into(), "lo".into()], then, ..Response::default() }
    }

    #[test]
    fn a_text_stream_is_the_documented_event_flow() {
        let events = events(&encode(&text(Ending::Completed), &ctx()));
        assert_eq!(
            kinds(&events),
            [
                "message_start",
                "ping",
                "content_block_start",
                "text_delta",
                "text_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let message = &events[0].1["message"];
        assert_eq!(
            (&message["id"], &message["model"], &message["role"]),
            (&json!("msg_3"), &json!("claude-x"), &json!("assistant"))
        );
        assert_eq!(events[2].1["content_block"], json!({ "type": "text", "text": "" }));
        assert_eq!((&events[3].1["delta"]["text"], &events[4].1["index"]), (&json!("Hel"), &json!(0)));
        assert_eq!(events[6].1["delta"]["stop_reason"], "end_turn");
        assert_eq!(events[6].1["usage"]["output_tokens"], 10);
        assert_eq!(message["usage"]["input_tokens"], 100);
    }

    /// Anthropic has no refusal field: a refusal is its words as text and the `refusal` stop
    /// reason, streamed and whole.
    #[test]
    fn a_refusal_is_text_and_the_refusal_stop_reason() {
        let response = Response { refusal: vec!["I can't ".into(), "help.".into()], ..Response::default() };
        let events = events(&encode(&response, &ctx()));
        let text: String = events.iter().filter_map(|(_, data)| data["delta"]["text"].as_str()).collect();
        assert_eq!(text, "I can't help.");
        let stop = events.iter().find_map(|(_, data)| data["delta"]["stop_reason"].as_str());
        assert_eq!(stop, Some("refusal"));
    }

    /// A call's raw argument text goes out as `input_json_delta` fragments as written (the
    /// block starts `input: {}` as always), and the message still ends cleanly (`tool_use`).
    #[test]
    fn raw_arguments_stream_as_partial_json() {
        let raw = Call { name: "read".into(), raw_args: Some(r#"{"path": "a"#.into()), ..Call::default() };
        let events = events(&encode(&Response { calls: vec![raw], ..Response::default() }, &ctx()));
        let arguments: String = events.iter().filter_map(|(_, data)| data["delta"]["partial_json"].as_str()).collect();
        assert_eq!(arguments, r#"{"path": "a"#);
        let stop = events.iter().find_map(|(_, data)| data["delta"]["stop_reason"].as_str());
        assert_eq!(stop, Some("tool_use"));
    }

    #[test]
    fn thinking_tool_use_and_usage() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["thi".into(), "nk".into()], encrypted: Some("sig".into()) }],
            calls: vec![Call {
                name: "read".into(),
                args: json!({ "path": "a.txt" }),
                call_id: None,
                raw_args: None,
                ..Call::default()
            }],
            usage: Some(Usage { input: 7, cached: 3, output: 5, reasoning: 2 }),
            ..Response::default()
        };
        let events = events(&encode(&response, &ctx()));
        assert_eq!(
            kinds(&events),
            [
                "message_start",
                "ping",
                "content_block_start",
                "thinking_delta",
                "thinking_delta",
                "signature_delta",
                "content_block_stop",
                "content_block_start",
                "input_json_delta",
                "input_json_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(events[5].1["delta"]["signature"], "sig");
        let tool = &events[7].1;
        assert_eq!(tool["index"], 1);
        assert_eq!(tool["content_block"], json!({ "type": "tool_use", "id": "call_6", "name": "read", "input": {} }));
        let arguments: String =
            events[8..10].iter().map(|(_, data)| data["delta"]["partial_json"].as_str().unwrap()).collect();
        assert_eq!(arguments, r#"{"path":"a.txt"}"#);
        let delta = &events[11].1;
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        assert_eq!(
            delta["usage"],
            json!({
                "input_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3,
                "output_tokens": 5, "output_tokens_details": { "thinking_tokens": 2 },
            })
        );
    }

    #[test]
    fn endings() {
        let last = |then| events(&encode(&text(then), &ctx())).pop().unwrap();
        let (kind, data) = last(Ending::Error("server_is_overloaded".into()));
        assert_eq!((kind.as_str(), &data["error"]["type"]), ("error", &json!("overloaded_error")));
        assert_eq!(last(Ending::Failed("server_error".into())).1["error"]["type"], "api_error");
        let stop = |reason: &str| {
            let events = events(&encode(&text(Ending::Incomplete(reason.into())), &ctx()));
            events[events.len() - 2].1["delta"]["stop_reason"].clone()
        };
        assert_eq!(stop("max_output_tokens"), "max_tokens");
        assert_eq!(stop("content_filter"), "refusal");
        assert_eq!(last(Ending::Eof).0, "content_block_stop", "no message_stop");
        let steps = encode(&text(Ending::Disconnect), &ctx());
        assert_eq!(steps.last(), Some(&Step::Abort));
        let steps = encode(&text(Ending::Malformed), &ctx());
        assert_eq!(steps.last(), Some(&Step::Bytes(Bytes::from_static(MALFORMED_FRAME))));
    }

    /// `cut_after = 5` shows one text delta in the Responses stream; here too.
    #[test]
    fn cut_and_pause_land_on_the_same_text() {
        let cut = Response { cut_after: Some(5), ..text(Ending::Error("server_error".into())) };
        let events = events(&encode(&cut, &ctx()));
        assert_eq!(kinds(&events), ["message_start", "ping", "content_block_start", "text_delta", "error"]);
        assert_eq!(cut.visible_text(), "Hel");
        let paused = Response { pause: vec![Pause { after: 5, ms: 1000 }], ..text(Ending::Completed) };
        let steps = encode(&paused, &ctx());
        // One step per beat: `Created`, `InProgress`, `MessageAdded`, `TextPartAdded` (no frame)
        // and the first `TextDelta`, then the pause.
        assert_eq!(steps[5], Step::Pause(std::time::Duration::from_secs(1)));
        assert_eq!(steps[3], Step::Bytes(Bytes::new()));
        assert!(matches!(&steps[4], Step::Bytes(bytes) if bytes.starts_with(b"event: content_block_delta")));
    }

    #[test]
    fn the_non_streaming_answer() {
        let response = Response {
            calls: vec![Call {
                name: "read".into(),
                args: json!({ "path": "a" }),
                call_id: Some("toolu_1".into()),
                raw_args: None,
                ..Call::default()
            }],
            ..text(Ending::Completed)
        };
        let asked = Asked { path: "/v1/messages", body: &Body::from(json!({ "stream": false })) };
        let Answer { status, steps, .. } = answer(&response, &ctx(), &asked);
        let Step::Bytes(body) = &steps[0] else { panic!("{steps:?}") };
        let message: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            message["content"],
            json!([
                { "type": "text", "text": "Hello" },
                { "type": "tool_use", "id": "toolu_1", "name": "read", "input": { "path": "a" } },
            ])
        );
        assert_eq!(message["stop_reason"], "tool_use");
        let Answer { status, steps, .. } = answer(&text(Ending::Error("server_is_overloaded".into())), &ctx(), &asked);
        let Step::Bytes(body) = &steps[0] else { panic!("{steps:?}") };
        assert_eq!(
            (status, serde_json::from_slice::<Value>(body).unwrap()["error"]["type"].clone()),
            (529, json!("overloaded_error"))
        );
        assert!(matches!(answer(&text(Ending::Disconnect), &ctx(), &asked).steps[..], [Step::Bytes(_), Step::Abort]));
        let streamed = Asked { path: "/v1/messages", body: &Body::from(json!({ "stream": true })) };
        assert_eq!(answer(&text(Ending::Completed), &ctx(), &streamed).headers[0].1, "text/event-stream");
    }

    #[test]
    fn http_error_bodies() {
        let body = http_error_json;
        assert_eq!(body(429)["type"], "error");
        assert_eq!(body(429)["error"]["type"], "rate_limit_error");
        assert_eq!(body(529)["error"]["type"], "overloaded_error");
        assert_eq!(body(500)["error"]["message"], responses::error_message("server_error"));
    }

    #[test]
    fn a_request_reads_into_the_neutral_conversation() {
        let body = json!({
            "model": "claude-x", "system": [{ "type": "text", "text": "Be brief" }],
            "messages": [
                { "role": "user", "content": "go" },
                { "role": "assistant", "content": [
                    { "type": "thinking", "thinking": "plan", "signature": "sig" },
                    { "type": "text", "text": "Look" }, { "type": "text", "text": "ing" },
                    { "type": "tool_use", "id": "c1", "name": "read", "input": { "path": "a" } },
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "c1", "content": [{ "type": "text", "text": "A" }] },
                    { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBO" } },
                    { "type": "text", "text": "A notice" }, { "type": "text", "text": "next" },
                ]},
            ],
        });
        let conversation = read(&body).unwrap();
        assert_eq!(
            (conversation.model.as_deref(), conversation.system.as_slice()),
            (Some("claude-x"), &["Be brief".to_owned()][..])
        );
        assert_eq!(
            conversation.messages,
            [
                Message::User { text: "go".into() },
                Message::Reasoning { text: "plan".into(), opaque: Some("sig".into()) },
                Message::Assistant { text: "Looking".into() },
                Message::ToolCall { call_id: "c1".into(), name: "read".into(), args: json!({ "path": "a" }) },
                Message::ToolResult { call_id: "c1".into(), output: "A".into() },
                Message::Image { url: "data:image/png;base64,iVBO".into() },
                Message::User { text: "A notice".into() },
                Message::User { text: "next".into() },
            ]
        );
        assert!(read(&json!({ "messages": [{ "role": "system", "content": "x" }] })).is_err());
        assert!(read(&json!([])).is_err());
    }
}
