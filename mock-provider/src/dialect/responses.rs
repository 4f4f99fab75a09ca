//! The OpenAI Responses API streaming dialect: SSE events, in-band errors and HTTP error bodies.
//!
//! A stream is a list of content frames (from `response.created` to the last
//! `response.output_item.done`) followed by one terminal chosen by [`Ending`]. With
//! `cut_after = N` only the first N content frames are sent; a terminal `response.completed`
//! or `response.incomplete` after a cut lists only the items whose `output_item.done` was sent.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{EncodeContext, Step};
use crate::script::{Ending, Response, Usage};

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

/// Encodes one scripted response as a Responses API SSE stream.
pub fn encode(response: &Response, ctx: &EncodeContext) -> Vec<Step> {
    let mut content = content_events(response, ctx);
    content.truncate(response.cut_after.unwrap_or(usize::MAX));
    let output: Vec<Value> = content.iter().filter_map(|e| e.done.clone()).collect();
    let usage = usage_json(response.effective_usage());
    let terminal = match &response.then {
        Ending::Completed => {
            let body = merge(response_object(ctx, "completed", output), json!({ "usage": usage }));
            Some(Event::new("response.completed", json!({ "response": body })))
        }
        Ending::Incomplete(reason) => {
            let patch = json!({ "usage": usage, "incomplete_details": { "reason": reason } });
            let body = merge(response_object(ctx, "incomplete", output), patch);
            Some(Event::new("response.incomplete", json!({ "response": body })))
        }
        Ending::Failed(code) => {
            let patch = json!({ "error": { "code": code, "message": error_message(code) } });
            let body = merge(response_object(ctx, "failed", output), patch);
            Some(Event::new("response.failed", json!({ "response": body })))
        }
        Ending::Error(code) => {
            Some(Event::new("error", json!({ "code": code, "message": error_message(code), "param": null })))
        }
        Ending::Disconnect | Ending::Eof | Ending::Malformed => None,
    };
    let mut steps: Vec<Step> =
        content.into_iter().chain(terminal).enumerate().map(|(seq, e)| Step::Bytes(e.sse(seq))).collect();
    if response.then == Ending::Malformed {
        steps.push(Step::Bytes(Bytes::from_static(MALFORMED_FRAME)));
    }
    if let Some(pause) = response.pause {
        let at = pause.after.min(steps.len());
        steps.insert(at, Step::Pause(std::time::Duration::from_millis(pause.ms)));
    }
    if response.then == Ending::Disconnect {
        steps.push(Step::Abort);
    }
    steps
}

/// Every non-terminal event of the full stream, in order.
fn content_events(r: &Response, ctx: &EncodeContext) -> Vec<Event> {
    let shell = || json!({ "response": response_object(ctx, "in_progress", Vec::new()) });
    let mut events = vec![Event::new("response.created", shell()), Event::new("response.in_progress", shell())];
    let mut index = 0;
    for reasoning in &r.reasoning {
        let id = format!("rs_{}", ctx.item_base + index);
        let text = reasoning.summary.concat();
        let at = json!({ "item_id": id, "output_index": index, "summary_index": 0 });
        let part = |text: &str| json!({ "type": "summary_text", "text": text });
        let added = json!({ "type": "reasoning", "id": id, "summary": [] });
        events.push(Event::new("response.output_item.added", json!({ "output_index": index, "item": added })));
        events.push(scoped("response.reasoning_summary_part.added", &at, json!({ "part": part("") })));
        let delta = |d: &String| scoped("response.reasoning_summary_text.delta", &at, json!({ "delta": d }));
        events.extend(reasoning.summary.iter().map(delta));
        events.push(scoped("response.reasoning_summary_text.done", &at, json!({ "text": text })));
        events.push(scoped("response.reasoning_summary_part.done", &at, json!({ "part": part(&text) })));
        let mut item = json!({ "type": "reasoning", "id": id, "summary": [part(&text)] });
        if let Some(encrypted) = &reasoning.encrypted {
            item = merge(item, json!({ "encrypted_content": encrypted }));
        }
        events.push(Event::item_done(index, item));
        index += 1;
    }
    if !r.text.is_empty() {
        let id = format!("msg_{}", ctx.item_base + index);
        let text = r.text.concat();
        let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
        let part = |text: &str| json!({ "type": "output_text", "text": text, "annotations": [] });
        let message = |status: &str, content: Value| json!({ "type": "message", "id": id, "role": "assistant", "status": status, "content": content });
        let added = json!({ "output_index": index, "item": message("in_progress", json!([])) });
        events.push(Event::new("response.output_item.added", added));
        events.push(scoped("response.content_part.added", &at, json!({ "part": part("") })));
        let delta = |d: &String| scoped("response.output_text.delta", &at, json!({ "delta": d, "logprobs": [] }));
        events.extend(r.text.iter().map(delta));
        events.push(scoped("response.output_text.done", &at, json!({ "text": text })));
        events.push(scoped("response.content_part.done", &at, json!({ "part": part(&text) })));
        events.push(Event::item_done(index, message("completed", json!([part(&text)]))));
        index += 1;
    }
    for call in &r.calls {
        let n = ctx.item_base + index;
        let (id, arguments) = (format!("fc_{n}"), call.args.to_string());
        let call_id = call.call_id.clone().unwrap_or_else(|| format!("call_{n}"));
        let item = |arguments: &str, status: &str| {
            json!({ "type": "function_call", "id": id, "call_id": call_id, "name": call.name,
                    "arguments": arguments, "status": status })
        };
        let at = json!({ "item_id": id, "output_index": index });
        let added = json!({ "output_index": index, "item": item("", "in_progress") });
        events.push(Event::new("response.output_item.added", added));
        let delta = |d: &str| scoped("response.function_call_arguments.delta", &at, json!({ "delta": d }));
        events.extend(split_in_two(&arguments).into_iter().map(delta));
        events.push(scoped("response.function_call_arguments.done", &at, json!({ "arguments": arguments })));
        events.push(Event::item_done(index, item(&arguments, "completed")));
        index += 1;
    }
    events
}

/// An event about one item: `at` (item id, output index, part index) plus `extra`.
fn scoped(kind: &'static str, at: &Value, extra: Value) -> Event {
    Event::new(kind, merge(at.clone(), extra))
}

/// Two halves at a char boundary near the middle, or one chunk if shorter than 2 chars.
fn split_in_two(text: &str) -> Vec<&str> {
    let chars = text.chars().count();
    if chars < 2 {
        return vec![text];
    }
    let mid = text.char_indices().nth(chars / 2).map_or(text.len(), |(i, _)| i);
    vec![&text[..mid], &text[mid..]]
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
pub fn http_error_body(status: u16) -> Bytes {
    let (kind, code) = match status {
        400 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500 => ("server_error", Some("server_error")),
        502 | 503 => ("service_unavailable", Some("server_is_overloaded")),
        _ if status >= 500 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    let body = json!({ "error": { "message": http_error_message(status), "type": kind, "param": null, "code": code } });
    Bytes::from(body.to_string())
}

/// The message of the error body answered with HTTP `status`: every dialect says the same, so
/// a runtime that records it writes the same Log whichever dialect it spoke.
pub fn http_error_message(status: u16) -> String {
    match status {
        400 => "Invalid request.".to_owned(),
        401 => error_message("invalid_api_key"),
        429 => error_message("rate_limit_exceeded"),
        500 => error_message("server_error"),
        502 | 503 => error_message("server_is_overloaded"),
        _ => format!("The provider returned HTTP {status}."),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Call, Pause, Reasoning};

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

    #[test]
    fn reasoning_and_calls_with_usage() {
        let response = Response {
            reasoning: vec![Reasoning { summary: vec!["thi".into(), "nk".into()], encrypted: Some("opaque".into()) }],
            calls: vec![Call { name: "shell".into(), args: json!({ "b": 1, "a": "x" }), call_id: None }],
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

        let paused = Response { pause: Some(Pause { after: 2, ms: 600_000 }), ..text(Ending::Disconnect) };
        let steps = encode(&paused, &ctx());
        assert_eq!(steps[2], Step::Pause(std::time::Duration::from_secs(600)));
        assert!(matches!(steps[1], Step::Bytes(_)) && matches!(steps[3], Step::Bytes(_)));
        let late = Response { pause: Some(Pause { after: 99, ms: 1 }), ..text(Ending::Disconnect) };
        let steps = encode(&late, &ctx());
        assert!(matches!(steps[steps.len() - 2..], [Step::Pause(_), Step::Abort]));
    }

    #[test]
    fn http_error_bodies() {
        let error = |status| serde_json::from_slice::<Value>(&http_error_body(status)).unwrap()["error"].clone();
        assert_eq!((&error(429)["type"], &error(429)["code"]), (&json!("requests"), &json!("rate_limit_exceeded")));
        assert_eq!(error(503)["code"], "server_is_overloaded");
        assert_eq!(error(418)["message"], "The provider returned HTTP 418.");
    }
}
