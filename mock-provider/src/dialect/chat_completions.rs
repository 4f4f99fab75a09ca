//! The OpenAI Chat Completions dialect: `POST /v1/chat/completions`, streamed as
//! `chat.completion.chunk` frames or answered as one `chat.completion` object.
//!
//! Frame shapes follow the OpenAI API reference as the SDKs generate it from the OpenAPI spec
//! (`openai/openai-python: src/openai/types/chat/chat_completion_chunk.py`, `chat_completion.py`,
//! `completion_usage.py`; `ChatCompletionStreamOptions` in the spec):
//!
//! - every chunk carries the same `id`, `object: "chat.completion.chunk"`, `created`, `model`
//!   and `choices: [{index, delta, logprobs, finish_reason}]`;
//! - the first delta is `{role: "assistant", content: "", refusal: null}`; text arrives as
//!   `delta.content`; a tool call as `delta.tool_calls: [{index, id, type: "function",
//!   function: {name, arguments: ""}}]` followed by `{index, function: {arguments}}` fragments;
//! - the last choice chunk has an empty delta and `finish_reason` `stop`, `length`,
//!   `tool_calls` or `content_filter`;
//! - with `stream_options.include_usage`, every chunk has `usage: null` and one more chunk
//!   with `choices: []` and the usage comes before `data: [DONE]`;
//! - an error during the stream is a `data: {"error": {message, type, param, code}}` frame
//!   (the same object as an HTTP error body), after which the stream ends.
//!
//! The Chat Completions wire has no reasoning items: reasoning beats send nothing.
//! `failed` and `error` endings are the same error frame. `incomplete` reasons map to
//! `finish_reason`: `content_filter` to `content_filter`, any other to `length`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::responses::{CREATED_AT, error_message, http_error_json};
use super::{Answer, Asked, Beat, EncodeContext, Encoder, Step, error_answer, play, sse_answer, whole_answer};
use crate::conversation::{Conversation, Message, ViewError, content_text};
use crate::script::{Ending, Response, Usage};

/// The single frame sent for [`Ending::Malformed`].
pub const MALFORMED_FRAME: &[u8] = b"data: {not json\n\n";

/// Whether `path` is the Chat Completions endpoint.
pub fn serves(path: &str) -> bool {
    path == "/v1/chat/completions"
}

/// The request body's `model`.
pub fn model(asked: &Asked<'_>) -> Option<String> {
    asked.body.field("model")?.as_str().map(str::to_owned)
}

/// The answer: the scripted HTTP error, a chunk stream when the request says `stream: true`,
/// else one `chat.completion` object.
pub fn answer(response: &Response, ctx: &EncodeContext, asked: &Asked<'_>) -> Answer {
    if let Some(status) = response.status {
        return error_answer(status, response.retry_after, http_error_json(status));
    }
    if asked.body.field("stream").and_then(|stream| stream.as_bool()) == Some(true) {
        let include_usage =
            asked.body.field("stream_options").and_then(|options| options.pointer("/include_usage")?.as_bool())
                == Some(true);
        let mut writer = Writer { response, ctx, include_usage, calls_sent: 0 };
        return sse_answer(play(response, &mut writer));
    }
    whole(response, ctx)
}

/// Encodes a response as a chunk stream, as for a request with `stream: true` and
/// `include_usage` as given.
pub fn encode(response: &Response, ctx: &EncodeContext, include_usage: bool) -> Vec<Step> {
    play(response, &mut Writer { response, ctx, include_usage, calls_sent: 0 })
}

struct Writer<'a> {
    response: &'a Response,
    ctx: &'a EncodeContext,
    include_usage: bool,
    /// Calls whose first chunk was sent: a clean end then says `tool_calls`.
    calls_sent: usize,
}

impl Writer<'_> {
    fn chunk(&self, choices: Value, usage: Option<Value>) -> Bytes {
        let mut chunk = json!({
            "id": completion_id(self.ctx), "object": "chat.completion.chunk", "created": CREATED_AT,
            "model": self.ctx.model, "system_fingerprint": null, "choices": choices,
        });
        if self.include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        data(&chunk)
    }

    fn delta(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let choice = json!({ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason });
        self.chunk(json!([choice]), None)
    }
}

impl Encoder for Writer<'_> {
    fn beat(&mut self, beat: &Beat<'_>) -> Vec<Bytes> {
        let delta = match *beat {
            Beat::Created => json!({ "role": "assistant", "content": "", "refusal": null }),
            Beat::TextDelta(text) if self.response.refuses() => json!({ "refusal": text }),
            Beat::TextDelta(text) => json!({ "content": text }),
            Beat::CallAdded { index, call } => {
                self.calls_sent += 1;
                let id = self.ctx.call_id(self.response, index);
                json!({ "tool_calls": [{ "index": index, "id": id, "type": "function",
                                          "function": { "name": call.name, "arguments": "" } }] })
            }
            Beat::ArgsDelta { index, delta } => {
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": delta } }] })
            }
            _ => return Vec::new(),
        };
        vec![self.delta(delta, None)]
    }

    fn end(&mut self, ending: &Ending, _cut: bool) -> Vec<Bytes> {
        let finish_reason = match ending {
            Ending::Completed if self.calls_sent > 0 => "tool_calls",
            Ending::Completed => "stop",
            Ending::Incomplete(reason) => finish_reason(reason),
            Ending::Error(code) | Ending::Failed(code) => return vec![data(&error_json(code))],
            Ending::Disconnect | Ending::Eof | Ending::Malformed => return Vec::new(),
        };
        let mut frames = vec![self.delta(json!({}), Some(finish_reason))];
        if self.include_usage {
            frames.push(self.chunk(json!([]), Some(usage_json(self.response.effective_usage()))));
        }
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        frames
    }

    fn malformed(&self) -> Bytes {
        Bytes::from_static(MALFORMED_FRAME)
    }
}

/// `finish_reason` for an `incomplete` reason.
fn finish_reason(reason: &str) -> &'static str {
    if reason == "content_filter" { "content_filter" } else { "length" }
}

/// A non-streamed answer: one `chat.completion` object through [`whole_answer`]; an error code
/// is the HTTP error of [`status_of`].
fn whole(response: &Response, ctx: &EncodeContext) -> Answer {
    let arguments = super::arguments(response);
    let beats = super::beats(response, &arguments);
    let shown = &beats[..response.cut_after.map_or(beats.len(), |cut| cut.min(beats.len()))];
    let text: String =
        shown.iter().filter_map(|beat| if let Beat::TextDelta(t) = beat { Some(*t) } else { None }).collect();
    let calls: Vec<Value> = shown
        .iter()
        .filter_map(|beat| match *beat {
            Beat::CallDone { index, call } => Some(json!({ "id": ctx.call_id(response, index), "type": "function",
                "function": { "name": call.name, "arguments": call.arguments() } })),
            _ => None,
        })
        .collect();
    let finish_reason = match &response.then {
        Ending::Incomplete(reason) => finish_reason(reason),
        _ if !calls.is_empty() => "tool_calls",
        _ => "stop",
    };
    let (content, refusal) =
        if response.refuses() { (None, Some(text)) } else { ((!text.is_empty()).then_some(text), None) };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": refusal });
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let body = json!({
        "id": completion_id(ctx), "object": "chat.completion", "created": CREATED_AT, "model": ctx.model,
        "system_fingerprint": null,
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason }],
        "usage": usage_json(response.effective_usage()),
    });
    whole_answer(response, body, |code| (status_of(code), error_json(code)))
}

/// The HTTP status a whole (non-streamed) answer fails with for an error code.
fn status_of(code: &str) -> u16 {
    match code {
        "rate_limit_exceeded" | "insufficient_quota" => 429,
        "server_is_overloaded" | "service_unavailable" => 503,
        "context_length_exceeded" | "invalid_prompt" => 400,
        "invalid_api_key" => 401,
        _ => 500,
    }
}

/// The error object of the OpenAI API for a code, as sent in the stream and as an HTTP body.
fn error_json(code: &str) -> Value {
    let kind = match code {
        "rate_limit_exceeded" => "requests",
        "insufficient_quota" => "insufficient_quota",
        "context_length_exceeded" | "invalid_prompt" | "invalid_api_key" => "invalid_request_error",
        _ => "server_error",
    };
    json!({ "error": { "message": error_message(code), "type": kind, "param": null, "code": code } })
}

fn completion_id(ctx: &EncodeContext) -> String {
    format!("chatcmpl-{}", ctx.response_id.trim_start_matches("resp_"))
}

fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// `CompletionUsage`: prompt, completion and total tokens with their details.
fn usage_json(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input.saturating_add(u.output),
        "prompt_tokens_details": { "cached_tokens": u.cached, "audio_tokens": 0 },
        "completion_tokens_details": { "reasoning_tokens": u.reasoning, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 },
    })
}

/// Reads a Chat Completions request body: `system` / `developer` messages, `user` messages
/// (their `image_url` parts as images),
/// `assistant` messages with their `tool_calls`, and `tool` messages.
pub fn read(body: &Value) -> Result<Conversation, ViewError> {
    let object = body.as_object().ok_or_else(|| ViewError("the body is not a JSON object".to_owned()))?;
    let messages = match object.get("messages") {
        Some(Value::Array(messages)) => messages.as_slice(),
        None => &[],
        Some(_) => return Err(ViewError("`messages` is not an array".to_owned())),
    };
    let mut conversation = Conversation {
        model: object.get("model").and_then(Value::as_str).map(str::to_owned),
        ..Conversation::default()
    };
    for message in messages {
        let text = content_text(message.get("content"));
        match message.get("role").and_then(Value::as_str).unwrap_or_default() {
            "system" | "developer" => conversation.system.push(text),
            "user" => {
                conversation.messages.push(Message::User { text });
                // Its `image_url` parts follow its text.
                let parts = message.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                for part in parts.iter().filter(|part| part.get("type").and_then(Value::as_str) == Some("image_url")) {
                    let url = part.pointer("/image_url/url").and_then(Value::as_str).unwrap_or_default().to_owned();
                    conversation.messages.push(Message::Image { url });
                }
            }
            "assistant" => {
                if !text.is_empty() {
                    conversation.messages.push(Message::Assistant { text });
                }
                for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let field =
                        |pointer: &str| call.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
                    conversation.messages.push(Message::ToolCall {
                        call_id: field("/id"),
                        name: field("/function/name"),
                        args: call.pointer("/function/arguments").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            "tool" => conversation.messages.push(Message::ToolResult {
                call_id: message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                output: text,
            }),
            other => conversation.messages.push(Message::Other { kind: format!("role:{other}") }),
        }
    }
    Ok(conversation)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::script::{Call, Pause, Reasoning};

    fn ctx() -> EncodeContext {
        EncodeContext { response_id: "resp_1".into(), model: "m".into(), item_base: 5 }
    }

    /// The `data:` payloads of a stream, `[DONE]` as a string.
    fn frames(steps: &[Step]) -> Vec<Value> {
        steps
            .iter()
            .filter_map(|step| if let Step::Bytes(b) = step { Some(std::str::from_utf8(b).unwrap()) } else { None })
            .flat_map(|chunk| chunk.split_terminator("\n\n"))
            .map(|frame| {
                let data = frame.strip_prefix("data: ").unwrap();
                serde_json::from_str(data).unwrap_or_else(|_| json!(data))
            })
            .collect()
    }

    #[test]
    fn text_stream_with_usage() {
        let response = Response { text: vec!["Hel".into(), "lo".into()], ..Response::default() };
        let frames = frames(&encode(&response, &ctx(), true));
        assert_eq!(frames.len(), 6);
        assert_eq!(frames[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(frames[0]["object"], "chat.completion.chunk");
        assert_eq!(frames[0]["usage"], Value::Null);
        let text: String = frames[1..3].iter().map(|f| f["choices"][0]["delta"]["content"].as_str().unwrap()).collect();
        assert_eq!(text, "Hello");
        assert_eq!(frames[3]["choices"][0]["finish_reason"], "stop");
        assert_eq!(frames[4]["choices"], json!([]));
        assert_eq!(frames[4]["usage"]["prompt_tokens"], 100);
        assert_eq!(frames[4]["usage"]["total_tokens"], 110);
        assert_eq!(frames[5], "[DONE]");
        let without = frames_of(&response, false);
        assert!(without.iter().all(|frame| frame.get("usage").is_none()));
        assert_eq!(without.len(), 5);
    }

    fn frames_of(response: &Response, include_usage: bool) -> Vec<Value> {
        frames(&encode(response, &ctx(), include_usage))
    }

    /// A refusal streams as `delta.refusal` chunks and ends `stop`; whole, it is the message's
    /// `refusal` with no `content`.
    #[test]
    fn a_refusal_is_the_refusal_field() {
        let response = Response { refusal: vec!["I can't ".into(), "help.".into()], ..Response::default() };
        let frames = frames_of(&response, false);
        let refusal: String = frames.iter().filter_map(|f| f["choices"][0]["delta"]["refusal"].as_str()).collect();
        assert_eq!(refusal, "I can't help.");
        assert!(frames.iter().all(|f| f["choices"][0]["delta"]["content"].as_str().unwrap_or_default().is_empty()));
        let finish = frames.iter().find_map(|f| f["choices"][0]["finish_reason"].as_str());
        assert_eq!(finish, Some("stop"));
        let whole = whole(&response, &ctx());
        let bytes: Vec<u8> = whole
            .steps
            .iter()
            .flat_map(|step| if let Step::Bytes(b) = step { b.to_vec() } else { Vec::new() })
            .collect();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (&body["choices"][0]["message"]["refusal"], &body["choices"][0]["message"]["content"]),
            (&json!("I can't help."), &Value::Null)
        );
    }

    /// The first call's `function.arguments` fragments of `frames`, joined.
    fn arguments_of(frames: &[Value]) -> String {
        frames
            .iter()
            .map(|f| f["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str().unwrap())
            .collect()
    }

    /// A call's raw argument text goes out in `function.arguments` fragments as written, JSON
    /// or not, and the stream still ends cleanly (`tool_calls`).
    #[test]
    fn raw_arguments_stream_as_written() {
        let raw = Call { name: "read".into(), raw_args: Some(r#"{"path": "a"#.into()), ..Call::default() };
        let frames = frames_of(&Response { calls: vec![raw], ..Response::default() }, false);
        let args = arguments_of(&frames[1..4]);
        assert_eq!(args, r#"{"path": "a"#);
        assert_eq!(frames[4]["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn tool_calls_stream_in_fragments_and_reasoning_sends_nothing() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["hm".into()], encrypted: None }],
            calls: vec![Call {
                name: "read".into(),
                args: json!({ "path": "a" }),
                call_id: None,
                raw_args: None,
                ..Call::default()
            }],
            usage: Some(Usage { input: 7, cached: 3, output: 5, reasoning: 2 }),
            ..Response::default()
        };
        let frames = frames_of(&response, true);
        let first = &frames[1]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(
            (&first["index"], &first["id"], &first["function"]["name"]),
            (&json!(0), &json!("call_6"), &json!("read"))
        );
        let args = arguments_of(&frames[1..4]);
        assert_eq!(args, r#"{"path":"a"}"#);
        assert_eq!(frames[4]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(frames[5]["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
        assert_eq!(frames[5]["usage"]["completion_tokens_details"]["reasoning_tokens"], 2);
    }

    #[test]
    fn endings() {
        let text = |then| Response { text: vec!["Hi".into()], then, ..Response::default() };
        let last = |then| frames_of(&text(then), false).pop().unwrap();
        assert_eq!(last(Ending::Error("server_error".into()))["error"]["code"], "server_error");
        assert_eq!(last(Ending::Failed("rate_limit_exceeded".into()))["error"]["type"], "requests");
        let cut = frames_of(&text(Ending::Incomplete("max_output_tokens".into())), false);
        assert_eq!(cut[cut.len() - 2]["choices"][0]["finish_reason"], "length");
        let filtered = frames_of(&text(Ending::Incomplete("content_filter".into())), false);
        assert_eq!(filtered[filtered.len() - 2]["choices"][0]["finish_reason"], "content_filter");
        assert_eq!(last(Ending::Eof)["choices"][0]["delta"]["content"], "Hi");
        let steps = encode(&text(Ending::Disconnect), &ctx(), false);
        assert_eq!(steps.last(), Some(&Step::Abort));
        let steps = encode(&text(Ending::Malformed), &ctx(), false);
        assert_eq!(steps.last(), Some(&Step::Bytes(Bytes::from_static(MALFORMED_FRAME))));
        // One step per beat, as in every dialect: created .. message done, no terminal.
        assert_eq!(steps.len(), 2 + 2 + 1 + 3 + 1);
    }

    #[test]
    fn a_pause_falls_at_the_same_beat_as_in_responses() {
        // created, in_progress, message added, part added, first delta: then the pause.
        let response = Response {
            text: vec!["a".into(), "b".into()],
            pause: vec![Pause { after: 5, ms: 10 }],
            ..Response::default()
        };
        let steps = encode(&response, &ctx(), false);
        let before: Vec<_> = steps.iter().take_while(|step| !matches!(step, Step::Pause(_))).collect();
        assert_eq!(frames(&before.into_iter().cloned().collect::<Vec<_>>()).len(), 2, "role chunk, then `a`");
    }

    #[test]
    fn whole_answers_when_not_streaming() {
        let response = Response {
            text: vec!["Hi".into()],
            calls: vec![Call {
                name: "read".into(),
                args: json!({}),
                call_id: Some("c1".into()),
                raw_args: None,
                ..Call::default()
            }],
            ..Response::default()
        };
        let asked = Asked { path: "/v1/chat/completions", body: &Body::from(json!({ "model": "m" })) };
        let answer = answer(&response, &ctx(), &asked);
        let Step::Bytes(body) = &answer.steps[0] else { panic!() };
        let body: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["message"]["content"], "Hi");
        assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "c1");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        let failing = Response { then: Ending::Error("rate_limit_exceeded".into()), ..Response::default() };
        assert_eq!(super::answer(&failing, &ctx(), &asked).status, 429);
    }

    #[test]
    fn reads_a_request() {
        let body = json!({ "model": "m", "messages": [
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": [{ "type": "text", "text": "Hi" }, { "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBO" } }] },
            { "role": "assistant", "content": null, "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "read", "arguments": "{}" } }] },
            { "role": "tool", "tool_call_id": "c1", "content": "A" },
            { "role": "assistant", "content": "Done." },
        ]});
        let conversation = read(&body).unwrap();
        assert_eq!(conversation.system, ["Be brief."]);
        assert_eq!(
            conversation.messages,
            [
                Message::User { text: "Hi".into() },
                Message::Image { url: "data:image/png;base64,iVBO".into() },
                Message::ToolCall { call_id: "c1".into(), name: "read".into(), args: json!("{}") },
                Message::ToolResult { call_id: "c1".into(), output: "A".into() },
                Message::Assistant { text: "Done.".into() },
            ]
        );
        assert!(read(&json!("x")).is_err());
    }
}
