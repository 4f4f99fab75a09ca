//! The Gemini dialect (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and
//! `:generateContent`): `GenerateContentResponse` chunks as SSE `data:` lines, the
//! non-streaming answer, in-stream and HTTP error bodies (docs/dialects.md).
//!
//! Every chunk has one candidate whose `content.parts` holds one part: a thought
//! (`thought: true`) per reasoning summary chunk, then a thought part carrying only the
//! `thoughtSignature` when the script gives `encrypted`; a text part per text chunk; a
//! `functionCall` part per call (Gemini sends a call whole, never in fragments). A response
//! that completes or stops early (`incomplete`) closes with an empty text part carrying
//! `finishReason` and `usageMetadata`; an in-stream error closes with an `error` body instead.
//! Chunks end with CRLF CRLF, as Google's servers send them. `cut_after` and `pause` count
//! Responses frames (see [`super::play`]).

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    Answer, Asked, Beat, EncodeContext, Encoder, Step, beats, error_answer, play, responses, sse_answer, whole_answer,
};
use crate::conversation::{Conversation, Message, ViewError};
use crate::script::{Ending, Response, Usage};

/// The single frame sent for [`Ending::Malformed`].
pub const MALFORMED_FRAME: &[u8] = b"data: {not json\r\n\r\n";

/// True for `/v1beta/models/{model}:streamGenerateContent` and `:generateContent`.
pub fn serves(path: &str) -> bool {
    path.strip_prefix("/v1beta/models/")
        .is_some_and(|rest| rest.ends_with(":streamGenerateContent") || rest.ends_with(":generateContent"))
}

/// The model a request names in its path.
pub fn model(asked: &Asked<'_>) -> Option<String> {
    asked.path.strip_prefix("/v1beta/models/")?.split(':').next().map(str::to_owned)
}

/// The whole answer: the HTTP error a script's `status` asks for, the stream for
/// `:streamGenerateContent`, the whole response for `:generateContent`.
pub fn answer(response: &Response, ctx: &EncodeContext, asked: &Asked<'_>) -> Answer {
    match response.status {
        Some(status) => error_answer(status, response.retry_after, http_error_json(status)),
        None if asked.path.ends_with(":generateContent") => whole(response, ctx),
        None => sse_answer(encode(response, ctx)),
    }
}

fn sse(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\r\n\r\n"))
}

/// One `GenerateContentResponse` with a single candidate holding `parts`.
fn chunk(ctx: &EncodeContext, parts: Vec<Value>, finish: Option<&str>, usage: Option<Usage>) -> Value {
    let mut candidate = json!({ "content": { "parts": parts, "role": "model" }, "index": 0 });
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    let mut body = json!({ "candidates": [candidate] });
    if let Some(usage) = usage {
        body["usageMetadata"] = usage_json(usage);
    }
    body["modelVersion"] = json!(ctx.model);
    body["responseId"] = json!(ctx.response_id);
    body
}

/// Encodes one scripted response as a `streamGenerateContent?alt=sse` body.
pub fn encode(response: &Response, ctx: &EncodeContext) -> Vec<Step> {
    play(response, &mut Writer { response, ctx })
}

/// The Gemini encoder: one chunk per part, whole calls at `CallDone`.
struct Writer<'a> {
    response: &'a Response,
    ctx: &'a EncodeContext,
}

impl Writer<'_> {
    fn part(&self, part: Value) -> Vec<Bytes> {
        vec![sse(&chunk(self.ctx, vec![part], None, None))]
    }
}

impl Encoder for Writer<'_> {
    fn beat(&mut self, beat: &Beat<'_>) -> Vec<Bytes> {
        match *beat {
            Beat::ReasoningDelta { delta, .. } => self.part(json!({ "text": delta, "thought": true })),
            Beat::ReasoningDone { reasoning, .. } => match &reasoning.encrypted {
                Some(signature) => self.part(json!({ "thought": true, "thoughtSignature": signature })),
                None => Vec::new(),
            },
            Beat::TextDelta(delta) => self.part(json!({ "text": delta })),
            Beat::CallDone { index, call } => {
                let call = json!({ "id": self.ctx.call_id(self.response, index), "name": call.name, "args": call.args_value() });
                self.part(json!({ "functionCall": call }))
            }
            _ => Vec::new(),
        }
    }

    fn end(&mut self, ending: &Ending, _cut: bool) -> Vec<Bytes> {
        match ending {
            Ending::Completed | Ending::Incomplete(_) => {
                let usage = Some(self.response.effective_usage());
                let finish = finish_reason(&self.response.stop_of(ending));
                vec![sse(&chunk(self.ctx, vec![json!({ "text": "" })], Some(finish), usage))]
            }
            Ending::Error(code) | Ending::Failed(code) => {
                let (status, name) = error_status(code);
                vec![sse(&error_json(status, name, &responses::error_message(code)))]
            }
            Ending::Eof | Ending::Malformed | Ending::Disconnect => Vec::new(),
        }
    }

    fn malformed(&self) -> Bytes {
        Bytes::from_static(MALFORMED_FRAME)
    }
}

/// The `:generateContent` answer: the whole response, with the parts a cut left complete,
/// through [`whole_answer`]; an error code is the HTTP error of its canonical status.
fn whole(response: &Response, ctx: &EncodeContext) -> Answer {
    let arguments = super::arguments(response);
    let all = beats(response, &arguments);
    let shown = response.cut_after.map_or(all.len(), |cut| cut.min(all.len()));
    let mut parts = Vec::new();
    for beat in &all[..shown] {
        match *beat {
            Beat::ReasoningDone { reasoning, .. } => {
                let mut part = json!({ "text": reasoning.summary.concat(), "thought": true });
                if let Some(signature) = &reasoning.encrypted {
                    part["thoughtSignature"] = json!(signature);
                }
                parts.push(part);
            }
            Beat::MessageDone => parts.push(json!({ "text": response.message().concat() })),
            Beat::CallDone { index, call } => {
                parts.push(json!({ "functionCall": { "id": ctx.call_id(response, index), "name": call.name, "args": call.args_value() } }));
            }
            _ => {}
        }
    }
    let finish = finish_reason(&response.stop_of(&response.then));
    let body = chunk(ctx, parts, Some(finish), Some(response.effective_usage()));
    whole_answer(response, body, |code| {
        let (status, name) = error_status(code);
        (status, error_json(status, name, &responses::error_message(code)))
    })
}

/// `SAFETY` for a content filter, `MAX_TOKENS` for any other early stop, else `STOP` (calls
/// included: Gemini has no finish reason of its own for them).
fn finish_reason(then: &Ending) -> &'static str {
    match then {
        Ending::Incomplete(reason) if reason == "content_filter" => "SAFETY",
        Ending::Incomplete(_) => "MAX_TOKENS",
        _ => "STOP",
    }
}

/// `usageMetadata`: the prompt count includes the cached tokens, and the candidates count
/// excludes the thoughts, which are counted apart.
fn usage_json(usage: Usage) -> Value {
    json!({
        "promptTokenCount": usage.input,
        "cachedContentTokenCount": usage.cached,
        "candidatesTokenCount": usage.output.saturating_sub(usage.reasoning),
        "thoughtsTokenCount": usage.reasoning,
        "totalTokenCount": usage.input.saturating_add(usage.output),
    })
}

/// The HTTP code and canonical status a script's error code stands for.
pub fn error_status(code: &str) -> (u16, &'static str) {
    match code {
        "rate_limit_exceeded" | "insufficient_quota" => (429, "RESOURCE_EXHAUSTED"),
        "server_is_overloaded" | "service_unavailable" => (503, "UNAVAILABLE"),
        "invalid_prompt" | "context_length_exceeded" | "invalid_api_key" => (400, "INVALID_ARGUMENT"),
        _ => (500, "INTERNAL"),
    }
}

fn error_json(status: u16, name: &str, message: &str) -> Value {
    json!({ "error": { "code": status, "message": message, "status": name } })
}

/// The error body answered with an HTTP error `status`; its message is the Responses body's,
/// so every dialect says the same.
pub fn http_error_json(status: u16) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        502 | 503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ if status >= 500 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    };
    let message = responses::http_error_json(status)["error"]["message"].as_str().unwrap_or_default().to_owned();
    error_json(status, name, &message)
}

/// A `GenerateContentRequest` body read into the dialect-neutral [`Conversation`]: the
/// `systemInstruction` text, then each content's parts in order.
///
/// A content of role `model` is the assistant's; `user`, `function` (the older role of tool
/// results) or no role is the user's. Consecutive text parts of a `model` content are one
/// answer, since a client may send back the chunks it streamed; each text part of a `user`
/// content is one user message. A thought is reasoning with its `thoughtSignature`; a
/// signature on a text part or a `functionCall` is reasoning without text (after the text,
/// before the call). A `functionCall` is a tool call; a `functionResponse` is the result of
/// the call its `id` names, whose output is `response.output` (a string as it is, any other
/// value as JSON), or the whole `response` as JSON when it has no `output`. `inlineData` is
/// an image, as a `data:` URL; any other part is kept by its field name. The model is in the
/// path, not the body.
pub fn read(body: &Value) -> Result<Conversation, ViewError> {
    let body = body.as_object().ok_or_else(|| ViewError("a Gemini request body is a JSON object".to_owned()))?;
    let text_of = |content: &Value| -> String {
        let parts = content.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect()
    };
    let system = body.get("systemInstruction").map(text_of).into_iter().collect();
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| ViewError("`contents` is missing or not an array".to_owned()))?;
    let mut read = Vec::new();
    for content in contents {
        let model = match content.get("role").and_then(Value::as_str) {
            Some("model") => true,
            // A content without role is the user's; `function` is the older role of responses.
            Some("user" | "function") | None => false,
            Some(other) => return Err(ViewError(format!("a content with role `{other}`: expected user or model"))),
        };
        let said = |text: String| if model { Message::Assistant { text } } else { Message::User { text } };
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .ok_or_else(|| ViewError("a content without `parts`".to_owned()))?;
        let mut text: Option<String> = None;
        for part in parts {
            let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_owned);
            let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
            if let (Some(chunk), false) = (part.get("text").and_then(Value::as_str), thought) {
                if !model && let Some(text) = text.take() {
                    read.push(said(text));
                }
                text.get_or_insert_with(String::new).push_str(chunk);
                if signature.is_none() {
                    continue;
                }
            }
            if let Some(text) = text.take() {
                read.push(said(text));
            }
            let field =
                |value: &Value, name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            if thought {
                read.push(Message::Reasoning { text: field(part, "text"), opaque: signature });
            } else if let Some(call) = part.get("functionCall") {
                if signature.is_some() {
                    read.push(Message::Reasoning { text: String::new(), opaque: signature });
                }
                read.push(Message::ToolCall {
                    call_id: field(call, "id"),
                    name: field(call, "name"),
                    args: call.get("args").cloned().unwrap_or(Value::Null),
                });
            } else if let Some(answer) = part.get("functionResponse") {
                let output = match answer.pointer("/response/output") {
                    Some(Value::String(output)) => output.clone(),
                    Some(other) => other.to_string(),
                    None => answer.get("response").map(Value::to_string).unwrap_or_default(),
                };
                read.push(Message::ToolResult { call_id: field(answer, "id"), output });
            } else if let Some(inline) = part.get("inlineData").or_else(|| part.get("inline_data")) {
                // Inline bytes, camelCase or snake_case (the API reads both), as a `data:` URL.
                let mime_type = inline.get("mimeType").or_else(|| inline.get("mime_type")).and_then(Value::as_str);
                let data = inline.get("data").and_then(Value::as_str).unwrap_or_default();
                read.push(Message::Image { url: crate::conversation::data_url(mime_type.unwrap_or_default(), data) });
            } else if signature.is_some() && part.get("text").is_some() {
                // A text part that carried a signature: its text was taken above.
                read.push(Message::Reasoning { text: String::new(), opaque: signature });
            } else {
                let kind =
                    part.as_object().and_then(|part| part.keys().find(|key| *key != "thoughtSignature").cloned());
                read.push(Message::Other { kind: kind.unwrap_or_else(|| "empty".to_owned()) });
            }
        }
        if let Some(text) = text {
            read.push(said(text));
        }
    }
    Ok(Conversation { model: None, system, messages: read })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::script::{Call, Pause, Reasoning};

    fn ctx() -> EncodeContext {
        EncodeContext { response_id: "resp_2".into(), model: "gemini-x".into(), item_base: 5 }
    }

    /// Every `data:` chunk of the byte steps, parsed, checking the CRLF framing. A step holds
    /// the chunks of one beat (none, one or several).
    fn chunks(steps: &[Step]) -> Vec<Value> {
        steps
            .iter()
            .filter_map(|step| if let Step::Bytes(bytes) = step { std::str::from_utf8(bytes).ok() } else { None })
            .flat_map(|chunk| {
                assert!(chunk.is_empty() || chunk.ends_with("\r\n\r\n"), "a step ends between chunks: {chunk:?}");
                chunk.split_terminator("\r\n\r\n")
            })
            .map(|frame| {
                let data = frame.strip_prefix("data: ").unwrap();
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }

    fn part(chunk: &Value) -> &Value {
        &chunk["candidates"][0]["content"]["parts"][0]
    }

    fn text(then: Ending) -> Response {
        Response { text: vec!["Hel".into(), "lo".into()], then, ..Response::default() }
    }

    #[test]
    fn a_text_stream_ends_with_finish_reason_and_usage() {
        let chunks = chunks(&encode(&text(Ending::Completed), &ctx()));
        assert_eq!(chunks.len(), 3);
        assert_eq!(part(&chunks[0]), &json!({ "text": "Hel" }));
        assert_eq!(chunks[0]["candidates"][0]["content"]["role"], "model");
        assert_eq!((&chunks[0]["modelVersion"], &chunks[0]["responseId"]), (&json!("gemini-x"), &json!("resp_2")));
        assert!(chunks[1]["candidates"][0].get("finishReason").is_none());
        let last = &chunks[2];
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["promptTokenCount"], 100);
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 110);
    }

    /// Gemini has no refusal field: a refusal is its words as text parts and `SAFETY`.
    #[test]
    fn a_refusal_is_text_and_safety() {
        let chunks = chunks(&encode(
            &Response { refusal: vec!["I can't ".into(), "help.".into()], ..Response::default() },
            &ctx(),
        ));
        let text: String = chunks.iter().filter_map(|chunk| part(chunk)["text"].as_str()).collect();
        assert_eq!(text, "I can't help.");
        assert_eq!(chunks.last().unwrap()["candidates"][0]["finishReason"], "SAFETY");
    }

    /// `functionCall.args` is an object: raw text that parses goes out as what it parses to;
    /// text that does not cannot be said on this wire (its scenarios skip Gemini) and goes out
    /// as a JSON string, which no Gemini sends.
    #[test]
    fn raw_arguments_are_an_object_when_they_parse() {
        let part_of = |raw: &str| {
            let call = Call { name: "read".into(), raw_args: Some(raw.into()), ..Call::default() };
            let chunks = chunks(&encode(&Response { calls: vec![call], ..Response::default() }, &ctx()));
            chunks.iter().map(part).find(|part| part.get("functionCall").is_some()).cloned().unwrap()
        };
        assert_eq!(part_of(r#"{"path": "a"}"#)["functionCall"]["args"], json!({ "path": "a" }));
        assert_eq!(part_of(r#"{"path": "a"#)["functionCall"]["args"], json!(r#"{"path": "a"#));
    }

    #[test]
    fn thoughts_signatures_calls_and_usage() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["thi".into(), "nk".into()], encrypted: Some("sig".into()) }],
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
        let chunks = chunks(&encode(&response, &ctx()));
        let parts: Vec<&Value> = chunks.iter().map(part).collect();
        assert_eq!(parts[0], &json!({ "text": "thi", "thought": true }));
        assert_eq!(parts[2], &json!({ "thought": true, "thoughtSignature": "sig" }));
        assert_eq!(parts[3], &json!({ "functionCall": { "id": "call_6", "name": "read", "args": { "path": "a" } } }));
        assert_eq!(
            chunks[4]["usageMetadata"],
            json!({
                "promptTokenCount": 7, "cachedContentTokenCount": 3, "candidatesTokenCount": 3,
                "thoughtsTokenCount": 2, "totalTokenCount": 12,
            })
        );
    }

    #[test]
    fn endings() {
        let last = |then| chunks(&encode(&text(then), &ctx())).pop().unwrap();
        assert_eq!(
            last(Ending::Error("server_error".into()))["error"],
            json!({
                "code": 500, "message": responses::error_message("server_error"), "status": "INTERNAL",
            })
        );
        assert_eq!(last(Ending::Failed("rate_limit_exceeded".into()))["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(last(Ending::Incomplete("max_output_tokens".into()))["candidates"][0]["finishReason"], "MAX_TOKENS");
        assert_eq!(last(Ending::Incomplete("content_filter".into()))["candidates"][0]["finishReason"], "SAFETY");
        assert!(last(Ending::Eof)["candidates"][0].get("finishReason").is_none());
        assert_eq!(encode(&text(Ending::Disconnect), &ctx()).last(), Some(&Step::Abort));
        let steps = encode(&text(Ending::Malformed), &ctx());
        assert_eq!(steps.last(), Some(&Step::Bytes(Bytes::from_static(MALFORMED_FRAME))));
    }

    #[test]
    fn cut_and_pause_land_on_the_same_text() {
        let cut = Response { cut_after: Some(5), ..text(Ending::Disconnect) };
        let steps = encode(&cut, &ctx());
        let shown = chunks(&steps);
        assert_eq!(shown.len(), 1);
        assert_eq!(part(&shown[0])["text"], cut.visible_text());
        let paused = Response { pause: vec![Pause { after: 5, ms: 7 }], ..text(Ending::Completed) };
        let steps = encode(&paused, &ctx());
        // One step per beat, four without a chunk before the first text, then the pause.
        assert_eq!(steps[5], Step::Pause(std::time::Duration::from_millis(7)));
        assert!(steps[..4].iter().all(|step| *step == Step::Bytes(Bytes::new())));
        assert_eq!(part(&chunks(&steps[4..5])[0])["text"], "Hel");
        assert_eq!(part(&chunks(&steps[6..7])[0])["text"], "lo");
    }

    #[test]
    fn the_non_streaming_answer_and_http_errors() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["a".into(), "b".into()], encrypted: None }],
            ..text(Ending::Completed)
        };
        let whole = Asked { path: "/v1beta/models/gemini-x:generateContent", body: &Body::from(Value::Null) };
        let Answer { status, steps, .. } = answer(&response, &ctx(), &whole);
        let Step::Bytes(body) = &steps[0] else { panic!("{steps:?}") };
        let body: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            body["candidates"][0]["content"]["parts"],
            json!([{ "text": "ab", "thought": true }, { "text": "Hello" }])
        );
        assert_eq!(answer(&text(Ending::Error("server_is_overloaded".into())), &ctx(), &whole).status, 503);
        let streamed = Asked { path: "/v1beta/models/gemini-x:streamGenerateContent", body: &Body::from(Value::Null) };
        assert_eq!(answer(&text(Ending::Completed), &ctx(), &streamed).headers[0].1, "text/event-stream");
        let error = |status| http_error_json(status)["error"].clone();
        assert_eq!(
            error(429),
            json!({ "code": 429, "message": responses::error_message("rate_limit_exceeded"), "status": "RESOURCE_EXHAUSTED" })
        );
        assert_eq!(error(503)["status"], "UNAVAILABLE");
    }

    #[test]
    fn a_request_reads_into_the_neutral_conversation() {
        let body = json!({
            "systemInstruction": { "parts": [{ "text": "Be brief" }] },
            "contents": [
                { "role": "user", "parts": [{ "text": "go" }] },
                { "role": "model", "parts": [
                    { "text": "plan", "thought": true, "thoughtSignature": "sig" },
                    { "text": "Look" }, { "text": "ing" },
                    { "functionCall": { "id": "c1", "name": "read", "args": { "path": "a" } }, "thoughtSignature": "sig2" },
                ]},
                { "role": "user", "parts": [
                    { "functionResponse": { "id": "c1", "name": "read", "response": { "output": "A" } } },
                    { "text": "A notice" }, { "text": "next" },
                ]},
                { "parts": [{ "inlineData": { "mimeType": "image/png", "data": "iVBO" } }, { "inline_data": { "mime_type": "image/gif", "data": "R0lG" } }, { "fileData": {} }] },
            ],
        });
        let conversation = read(&body).unwrap();
        assert_eq!((conversation.model, conversation.system), (None, vec!["Be brief".to_owned()]));
        assert_eq!(
            conversation.messages,
            [
                Message::User { text: "go".into() },
                Message::Reasoning { text: "plan".into(), opaque: Some("sig".into()) },
                Message::Assistant { text: "Looking".into() },
                Message::Reasoning { text: String::new(), opaque: Some("sig2".into()) },
                Message::ToolCall { call_id: "c1".into(), name: "read".into(), args: json!({ "path": "a" }) },
                Message::ToolResult { call_id: "c1".into(), output: "A".into() },
                Message::User { text: "A notice".into() },
                Message::User { text: "next".into() },
                Message::Image { url: "data:image/png;base64,iVBO".into() },
                Message::Image { url: "data:image/gif;base64,R0lG".into() },
                Message::Other { kind: "fileData".into() },
            ]
        );
        assert!(read(&json!({ "contents": [{ "role": "system", "parts": [] }] })).is_err());
        assert!(read(&json!({})).is_err());
    }
}
