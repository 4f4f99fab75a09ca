//! The Anthropic Messages client (`POST /v1/messages`): the request built from the replay
//! fold's items, and the SSE stream read into the runtime's dialect-neutral [`Reply`]
//! (docs/dialects.md). It shares no code with the mock's encoder, so each checks the other.
//!
//! | on the wire | in the runtime |
//! | --- | --- |
//! | `text_delta` | [`Delta::Text`] |
//! | `thinking` block (`thinking_delta`, `signature_delta`) | [`Delta::Reasoning`], then an [`OutputItem::Reasoning`] at `content_block_stop` |
//! | `tool_use` block (`input_json_delta`) | an [`OutputItem::Call`] at `content_block_stop` |
//! | `message_stop` after `stop_reason` `end_turn` / `tool_use` / `stop_sequence` | [`Finish::Completed`] |
//! | `stop_reason` `max_tokens`, `model_context_window_exceeded` | [`Finish::Incomplete`] `max_output_tokens` (TURN-TRUNCATION-EVIDENCE) |
//! | `stop_reason` `refusal` | [`Finish::Incomplete`] `content_filter` |
//! | `event: error` | `provider_http_error`, its `error.type` named in the OpenAI vocabulary ([`openai_code`]) |
//! | a body that ends before `message_stop` | `incomplete_stream` |
//! | a frame that is not JSON, or a delta for no open block | `invalid_response` |

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::provider::body::{Envelope, Messages, images};
use crate::provider::decode::Decode;
use crate::provider::{Call, Delta, Finish, OutputItem, ProviderFailure, Reply, Usage, reasoning, sse};

/// The request path.
pub const PATH: &str = "/v1/messages";
/// The API version every request names in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// The extended-thinking budget asked for (below `max_tokens`, at least 1024).
pub const THINKING_BUDGET: u64 = 16_000;

/// The request of one call: `POST /v1/messages` with `anthropic-version` (the runtime holds no
/// credentials, as with every dialect: whatever fronts the Provider adds them); the body has
/// the instructions as `system`, the replay fold's Responses-shaped `input` items as
/// alternating `messages`, the Responses-shaped tool definitions as `tools` with an
/// `input_schema`. The Messages API has no prompt cache key; `provider_usage` records the
/// call's all the same.
pub(crate) fn envelope(call: &Call) -> Envelope {
    let tools: Vec<Value> = call
        .tool_list()
        .iter()
        .map(|tool| json!({"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}))
        .collect();
    let fields = json!({
        "model": call.model,
        "max_tokens": super::MAX_OUTPUT_TOKENS,
        "system": call.instructions,
        "tools": tools,
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGET},
        "stream": true,
    });
    let headers = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
        ("anthropic-version".into(), API_VERSION.into()),
    ];
    Envelope::new(PATH, headers, fields, "messages")
}

/// The error code of an HTTP error body (`{"type": "error", "error": {"type", "message"}}`), in
/// the OpenAI vocabulary; none for the types that vocabulary names no code for.
pub fn error_code(body: &Value) -> Option<String> {
    body.pointer("/error/type").and_then(Value::as_str).and_then(openai_code).map(str::to_owned)
}

/// The OpenAI error code a Messages `error.type` stands for (the "Errors" page of the API
/// reference beside OpenAI's error codes), so a failure's Log is the same whatever the wire
/// (docs/contract.md "Dialect-neutral evidence"). A bad request, a missing resource or a
/// refused permission has no OpenAI code: its status says it.
pub fn openai_code(error_type: &str) -> Option<&'static str> {
    match error_type {
        "api_error" => Some("server_error"),
        "overloaded_error" => Some("server_is_overloaded"),
        "rate_limit_error" => Some("rate_limit_exceeded"),
        "authentication_error" => Some("invalid_api_key"),
        "billing_error" => Some("insufficient_quota"),
        _ => None,
    }
}

/// One replay item into `messages`: user text and tool results are `user` content blocks;
/// assistant text, thinking and tool uses are `assistant` blocks; consecutive blocks of one
/// role share a message, as the API requires roles to alternate.
pub(crate) fn push_item(messages: &mut Messages, item: &Value) {
    let (role, block) = match (item.get("type").and_then(Value::as_str), item.get("role").and_then(Value::as_str)) {
        (Some("function_call"), _) => {
            let arguments = item["arguments"].as_str().unwrap_or("{}");
            let input = serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({}));
            ("assistant", json!({"type": "tool_use", "id": item["call_id"], "name": item["name"], "input": input}))
        }
        (Some("function_call_output"), _) => {
            ("user", json!({"type": "tool_result", "tool_use_id": item["call_id"], "content": item["output"]}))
        }
        (Some("reasoning"), _) => match reasoning::signature(item) {
            Some(signature) => {
                ("assistant", json!({"type": "thinking", "thinking": reasoning::text(item), "signature": signature}))
            }
            // An unsigned thinking block is refused by the API; the text alone is not conversation.
            None => return,
        },
        (_, Some("assistant")) => ("assistant", json!({"type": "text", "text": message_text(item)})),
        (_, Some(_)) => ("user", json!({"type": "text", "text": message_text(item)})),
        _ => return,
    };
    messages.join_or_push(role, "content", block);
    // A user message's images follow its text, each a base64 `image` block.
    for (mime_type, data) in images(item) {
        let source = json!({"type": "base64", "media_type": mime_type, "data": data});
        messages.join_or_push("user", "content", json!({"type": "image", "source": source}));
    }
}

/// The text of a Responses message item: its `input_text` / `output_text` parts joined.
fn message_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// One open content block.
enum Block {
    Text,
    Thinking { text: String, signature: String },
    ToolUse { id: String, name: String, json: String },
}

/// Reads Messages events out of SSE frames until `message_stop`.
#[derive(Default)]
pub struct Decoder {
    decoder: sse::Decoder,
    text: String,
    items: Vec<OutputItem>,
    open: BTreeMap<u64, Block>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
}

impl Decode for Decoder {
    fn sse(&mut self) -> &mut sse::Decoder {
        &mut self.decoder
    }

    fn on_frame(
        &mut self,
        frame: sse::Frame,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Option<Reply>, ProviderFailure> {
        let event: Value = serde_json::from_str(&frame.data)
            .map_err(|error| ProviderFailure::invalid(&format!("data is not JSON ({error})"), &frame.data))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = &frame.event
            && name != kind
        {
            return Err(ProviderFailure::invalid(
                &format!("event name `{name}` differs from type `{kind}`"),
                &frame.data,
            ));
        }
        match kind {
            "message_start" => self.usage = Some(read_usage(&event["message"]["usage"], Usage::default())),
            "content_block_start" => self.read_content_block_start(&event, &frame.data, on_delta)?,
            "content_block_delta" => self.read_content_block_delta(&event, &frame.data, on_delta)?,
            "content_block_stop" => self.read_content_block_stop(&event, &frame.data)?,
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                let before = self.usage.unwrap_or_default();
                self.usage = Some(read_usage(&event["usage"], before));
            }
            "message_stop" => return Ok(Some(self.reply())),
            "error" => return Err(reported_error(&event)),
            // `ping`, and events added to the API later, carry nothing the runtime needs.
            _ => {}
        }
        Ok(None)
    }
}

/// The failure an `event: error` reports.
fn reported_error(event: &Value) -> ProviderFailure {
    let error_type = event.pointer("/error/type").and_then(Value::as_str).unwrap_or("unknown");
    let message = event.pointer("/error/message").and_then(Value::as_str).unwrap_or("no message");
    // A type the OpenAI vocabulary has no code for is named as the wire names it.
    ProviderFailure::reported(openai_code(error_type).unwrap_or(error_type), message)
}

impl Decoder {
    /// Opens the block of a `content_block_start`; a text block's first text is a delta.
    fn read_content_block_start(
        &mut self,
        event: &Value,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<(), ProviderFailure> {
        let index = self.index(event, data)?;
        let block = &event["content_block"];
        let open = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                self.text_delta(block["text"].as_str().unwrap_or_default(), on_delta);
                Block::Text
            }
            Some("thinking") => Block::Thinking {
                text: block["thinking"].as_str().unwrap_or_default().to_owned(),
                signature: block["signature"].as_str().unwrap_or_default().to_owned(),
            },
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(ProviderFailure::invalid("a tool_use block without id or name", data));
                };
                Block::ToolUse { id: id.to_owned(), name: name.to_owned(), json: String::new() }
            }
            // Blocks the runtime does not use (redacted thinking, server tools) are skipped.
            _ => return Ok(()),
        };
        self.open.insert(index, open);
        Ok(())
    }

    /// Adds a `content_block_delta` to its open block; a delta for no open block, or of a
    /// kind its block does not take, is invalid.
    fn read_content_block_delta(
        &mut self,
        event: &Value,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<(), ProviderFailure> {
        let index = self.index(event, data)?;
        let delta = &event["delta"];
        let field = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        match (self.open.get_mut(&index), delta.get("type").and_then(Value::as_str)) {
            (Some(Block::Text), Some("text_delta")) => self.text_delta(&field("text"), on_delta),
            (Some(Block::Thinking { text, .. }), Some("thinking_delta")) => {
                let chunk = field("thinking");
                text.push_str(&chunk);
                on_delta(Delta::Reasoning(chunk));
            }
            (Some(Block::Thinking { signature, .. }), Some("signature_delta")) => {
                signature.push_str(&field("signature"));
            }
            (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => json.push_str(&field("partial_json")),
            (None, _) => {
                return Err(ProviderFailure::invalid(&format!("a delta for block {index}, which is not open"), data));
            }
            (Some(_), other) => {
                let other = other.unwrap_or("none");
                return Err(ProviderFailure::invalid(&format!("a `{other}` delta does not fit block {index}"), data));
            }
        }
        Ok(())
    }

    /// Closes the block of a `content_block_stop`: a thinking or tool-use block becomes an
    /// output item.
    fn read_content_block_stop(&mut self, event: &Value, data: &str) -> Result<(), ProviderFailure> {
        let index = self.index(event, data)?;
        match self.open.remove(&index) {
            Some(Block::Thinking { text, signature }) => {
                self.items.push(OutputItem::Reasoning(reasoning::item(&text, Some(&signature))));
            }
            Some(Block::ToolUse { id, name, json }) => {
                // No `input_json_delta` leaves the block's `input: {}` as it started.
                let arguments = if json.trim().is_empty() { "{}" } else { json.as_str() };
                self.items.push(OutputItem::call(&id, &name, arguments));
            }
            Some(Block::Text) | None => {}
        }
        Ok(())
    }

    /// The reply read so far, at `message_stop`.
    fn reply(&mut self) -> Reply {
        Reply {
            text: std::mem::take(&mut self.text),
            items: std::mem::take(&mut self.items),
            usage: self.usage,
            finish: finish(self.stop_reason.as_deref()),
            attempts: 1,
        }
    }

    fn index(&self, event: &Value, data: &str) -> Result<u64, ProviderFailure> {
        event
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| ProviderFailure::invalid("a content block event without index", data))
    }

    fn text_delta(&mut self, chunk: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) {
        if !chunk.is_empty() {
            self.text.push_str(chunk);
            on_delta(Delta::Text(chunk.to_owned()));
        }
    }
}

/// Usage from a `message_start` or `message_delta` `usage` object over `before`: each count
/// present replaces the earlier one (the counts are cumulative). The prompt is the sum of
/// `input_tokens`, `cache_creation_input_tokens` and `cache_read_input_tokens`.
fn read_usage(usage: &Value, before: Usage) -> Usage {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64);
    let input = match (count("input_tokens"), count("cache_creation_input_tokens"), count("cache_read_input_tokens")) {
        (None, None, None) => before.input,
        (input, created, read) => input.unwrap_or(0) + created.unwrap_or(0) + read.unwrap_or(0),
    };
    let output = count("output_tokens").unwrap_or(before.output);
    Usage {
        input,
        cached: count("cache_read_input_tokens").unwrap_or(before.cached),
        output,
        reasoning: usage
            .pointer("/output_tokens_details/thinking_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(before.reasoning),
        total: input.saturating_add(output),
    }
}

/// The one place a Messages `stop_reason` becomes a [`Finish`].
fn finish(stop_reason: Option<&str>) -> Finish {
    match stop_reason {
        Some("max_tokens" | "model_context_window_exceeded") => Finish::Incomplete("max_output_tokens".to_owned()),
        Some("refusal") => Finish::Incomplete("content_filter".to_owned()),
        Some("pause_turn") => Finish::Incomplete("pause_turn".to_owned()),
        _ => Finish::Completed,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::ErrorKind;
    use crate::provider::{Dialect, Transcript, WireRequest};

    /// Feeds `frames` (event, data) byte by byte; returns the deltas and the outcome.
    fn read(frames: &[(&str, Value)]) -> (Vec<Delta>, Result<Option<Reply>, ProviderFailure>) {
        let mut bytes = String::new();
        for (event, data) in frames {
            bytes.push_str(&format!("event: {event}\ndata: {data}\n\n"));
        }
        read_bytes(bytes.as_bytes())
    }

    fn read_bytes(bytes: &[u8]) -> (Vec<Delta>, Result<Option<Reply>, ProviderFailure>) {
        let mut reader = Decoder::default();
        let mut deltas = Vec::new();
        let mut on_delta = |delta: Delta| deltas.push(delta);
        for byte in bytes {
            match reader.push(std::slice::from_ref(byte), &mut on_delta) {
                Ok(None) => {}
                done => return (deltas, done),
            }
        }
        let eof = reader.eof();
        (deltas, Err(eof))
    }

    fn start() -> (&'static str, Value) {
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3, "output_tokens": 1}}}),
        )
    }

    fn block(index: u64, content: Value) -> (&'static str, Value) {
        ("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": content}))
    }

    fn delta(index: u64, delta: Value) -> (&'static str, Value) {
        ("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": delta}))
    }

    fn stop(index: u64) -> (&'static str, Value) {
        ("content_block_stop", json!({"type": "content_block_stop", "index": index}))
    }

    fn end(reason: &str) -> Vec<(&'static str, Value)> {
        vec![
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5, "output_tokens_details": {"thinking_tokens": 2}}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]
    }

    #[test]
    fn thinking_text_and_tool_use_become_the_neutral_reply() {
        let mut frames = vec![
            start(),
            ("ping", json!({"type": "ping"})),
            block(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
            delta(0, json!({"type": "thinking_delta", "thinking": "hm"})),
            delta(0, json!({"type": "signature_delta", "signature": "sig"})),
            stop(0),
            block(1, json!({"type": "text", "text": ""})),
            delta(1, json!({"type": "text_delta", "text": "Hi"})),
            stop(1),
            block(2, json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}})),
            delta(2, json!({"type": "input_json_delta", "partial_json": "{\"path\":"})),
            delta(2, json!({"type": "input_json_delta", "partial_json": "\"a\"}"})),
            stop(2),
        ];
        frames.extend(end("tool_use"));
        let (deltas, reply) = read(&frames);
        let reply = reply.unwrap().unwrap();
        assert_eq!(deltas, [Delta::Reasoning("hm".into()), Delta::Text("Hi".into())]);
        assert_eq!(reply.text, "Hi");
        assert_eq!(reply.finish, Finish::Completed);
        assert_eq!(
            reply.items,
            [
                OutputItem::Reasoning(reasoning::item("hm", Some("sig"))),
                OutputItem::Call { call_id: "toolu_1".into(), name: "read".into(), args: json!({"path": "a"}) },
            ]
        );
        assert_eq!(reply.usage, Some(Usage { input: 7, cached: 3, output: 5, reasoning: 2, total: 12 }));
    }

    /// A `tool_use` block whose `partial_json` does not parse, in a message that ended cleanly,
    /// is the model's call as it made it (its text kept), never a malformed reply; a block
    /// with no `input_json_delta` keeps the `input: {}` it started with.
    #[test]
    fn tool_use_input_that_does_not_parse_is_kept_as_text() {
        let mut frames = vec![
            start(),
            block(0, json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}})),
            delta(0, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a"})),
            stop(0),
            block(1, json!({"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}})),
            stop(1),
        ];
        frames.extend(end("tool_use"));
        let reply = read(&frames).1.unwrap().unwrap();
        assert_eq!(
            reply.items,
            [
                OutputItem::Call { call_id: "toolu_1".into(), name: "read".into(), args: json!("{\"path\": \"a") },
                OutputItem::Call { call_id: "toolu_2".into(), name: "list".into(), args: json!({}) },
            ]
        );
    }

    #[test]
    fn stop_reasons_and_faults() {
        let reply = |reason: &str| {
            let mut frames = vec![start()];
            frames.extend(end(reason));
            read(&frames).1.unwrap().unwrap().finish
        };
        assert_eq!(reply("end_turn"), Finish::Completed);
        assert_eq!(reply("max_tokens"), Finish::Incomplete("max_output_tokens".into()));
        assert_eq!(reply("refusal"), Finish::Incomplete("content_filter".into()));

        let error = ("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
        let (_, failure) = read(&[
            start(),
            block(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Hal"})),
            error,
        ]);
        let failure = failure.unwrap_err();
        assert_eq!(
            (failure.kind, failure.details["code"].clone()),
            (ErrorKind::ProviderHttpError, json!("server_is_overloaded"))
        );

        let (deltas, failure) = read(&[
            start(),
            block(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Hal"})),
        ]);
        assert_eq!((deltas.len(), failure.unwrap_err().kind), (1, ErrorKind::IncompleteStream));

        let mut frames = vec![start()];
        frames.extend(end("end_turn"));
        frames.truncate(2);
        assert_eq!(read(&frames).1.unwrap_err().kind, ErrorKind::IncompleteStream, "message_delta is not the end");

        let (_, failure) = read_bytes(b"event: content_block_delta\ndata: {not json\n\n");
        assert_eq!(failure.unwrap_err().kind, ErrorKind::InvalidResponse);
        let (_, failure) = read(&[start(), delta(4, json!({"type": "text_delta", "text": "x"}))]);
        assert_eq!(failure.unwrap_err().kind, ErrorKind::InvalidResponse);
        let (_, failure) = read(&[("ping", json!({"type": "message_stop"}))]);
        assert_eq!(failure.unwrap_err().kind, ErrorKind::InvalidResponse);
    }

    #[test]
    fn the_request_alternates_roles_and_pairs_tool_results() {
        let input = vec![
            json!({"role": "user", "content": [{"type": "input_text", "text": "go"}]}),
            reasoning::item("plan", Some("sig")),
            reasoning::item("unsigned", None),
            json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "A"}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "next"}]}),
        ];
        let call = Call::with_read_tool("claude-x", "Be brief");
        let WireRequest { path, headers, body } =
            Transcript::of(Dialect::AnthropicMessages, &input).request(&call, &[]);
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(path, "/v1/messages");
        assert_eq!(body["system"], "Be brief");
        assert_eq!(body["stream"], true);
        assert_eq!(body["tools"], json!([{"name": "read", "description": "Read", "input_schema": {"type": "object"}}]));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig"},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}},
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "A"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                {"role": "user", "content": [{"type": "text", "text": "next"}]},
            ])
        );
        assert!(headers.contains(&("anthropic-version".into(), "2023-06-01".into())));
        assert_eq!(
            error_code(&json!({"type": "error", "error": {"type": "rate_limit_error"}})).as_deref(),
            Some("rate_limit_exceeded")
        );
        assert_eq!(error_code(&json!({"type": "error", "error": {"type": "invalid_request_error"}})), None);
    }
}
