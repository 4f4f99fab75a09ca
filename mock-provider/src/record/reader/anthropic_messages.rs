//! Reads an Anthropic Messages event stream or whole `Message`: `message_start` and `ping`,
//! then one content block per reasoning item (`thinking`), the text and each `tool_use`, then
//! `message_delta` and `message_stop`; an `error` event is an in-band error.

use serde_json::Value;

use crate::dialect::anthropic_messages::error_type;
use crate::record::draft::{Draft, Mark};
use crate::record::reader::{code_of, count};
use crate::script::Ending;

/// The state between frames: the open block's type, its signature, the stop reason.
#[derive(Debug, Default)]
pub struct Reader {
    block: Option<String>,
    signature: Option<String>,
    stop_reason: Option<String>,
}

impl Reader {
    /// Reads one event into `draft`.
    pub fn frame(&mut self, draft: &mut Draft, event: Option<&str>, data: &Value) {
        let kind = data.get("type").and_then(Value::as_str).or(event).unwrap_or_default();
        match kind {
            "message_start" => {
                draft.mark(Mark::Created);
                if let Some(usage) = data.pointer("/message/usage") {
                    input_usage(draft, usage);
                }
            }
            "ping" if draft.last() <= Some(Mark::Created) => draft.mark(Mark::InProgress),
            "ping" => {}
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                let block_type = block.get("type").and_then(Value::as_str).unwrap_or_default();
                let field = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
                match block_type {
                    "thinking" => draft.reasoning_added(),
                    "redacted_thinking" => {
                        draft.note(
                            "a redacted thinking block is replayed as a thinking block with its data as signature",
                        );
                        draft.reasoning_added();
                        self.signature = field("data");
                    }
                    "text" => draft.message_added(),
                    "tool_use" => draft.call_added(&field("name").unwrap_or_default(), field("id")),
                    other => draft.note(format!("a `{other}` content block was left out")),
                }
                self.block = Some(block_type.to_owned());
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
                match delta.get("type").and_then(Value::as_str).unwrap_or_default() {
                    "thinking_delta" => draft.reasoning_delta(field("thinking")),
                    "signature_delta" => self.signature = Some(field("signature").to_owned()),
                    "text_delta" => draft.text_delta(field("text")),
                    "input_json_delta" if !field("partial_json").is_empty() => draft.args_delta(field("partial_json")),
                    "input_json_delta" => {}
                    other => draft.note(format!("a `{other}` delta was left out")),
                }
            }
            "content_block_stop" => match self.block.take().as_deref() {
                Some("thinking" | "redacted_thinking") => draft.reasoning_done(self.signature.take()),
                Some("text") => draft.mark(Mark::MessageDone),
                Some("tool_use") => draft.call_done(None),
                _ => {}
            },
            "message_delta" => {
                self.stop_reason = data.pointer("/delta/stop_reason").and_then(Value::as_str).map(str::to_owned);
                if let Some(usage) = data.get("usage") {
                    output_usage(draft, usage);
                }
            }
            "message_stop" => {
                let ending = ending(draft, self.stop_reason.as_deref());
                draft.end(ending);
            }
            "error" => {
                let code = error_code(data);
                draft.end(Ending::Error(code));
            }
            other => draft.note(format!("a `{other}` event was left out")),
        }
    }
}

/// Reads a whole `Message` (a request with `stream: false`) into `draft`.
pub fn whole(draft: &mut Draft, body: &Value) {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        draft.end(Ending::Error(error_code(body)));
        return;
    }
    if let Some(usage) = body.get("usage") {
        input_usage(draft, usage);
        output_usage(draft, usage);
    }
    for block in body.get("content").and_then(Value::as_array).into_iter().flatten() {
        let field = |key: &str| block.get(key).and_then(Value::as_str);
        match field("type").unwrap_or_default() {
            "thinking" => {
                draft.reasoning_added();
                draft.reasoning_delta(field("thinking").unwrap_or_default());
                draft.reasoning_done(field("signature").filter(|signature| !signature.is_empty()).map(str::to_owned));
            }
            "text" => draft.text_delta(field("text").unwrap_or_default()),
            "tool_use" => draft.whole_call(
                field("name").unwrap_or_default(),
                field("id").map(str::to_owned),
                block.get("input").unwrap_or(&Value::Null),
            ),
            other => draft.note(format!("a `{other}` content block was left out")),
        }
    }
    let ending = ending(draft, body.get("stop_reason").and_then(Value::as_str));
    draft.end(ending);
}

/// Input usage: `input_tokens` leaves out the cache, which the script's `input` includes.
fn input_usage(draft: &mut Draft, usage: &Value) {
    let uncached = count(usage, "/input_tokens");
    let read = count(usage, "/cache_read_input_tokens").unwrap_or(0);
    let created = count(usage, "/cache_creation_input_tokens").unwrap_or(0);
    if created > 0 {
        draft.note("cache_creation_input_tokens is counted in `input`: the mock sends it as 0");
    }
    draft.usage(uncached.map(|uncached| uncached + read + created), uncached.map(|_| read), None, None);
}

/// Output usage, thinking tokens included.
fn output_usage(draft: &mut Draft, usage: &Value) {
    if usage.get("input_tokens").is_some() {
        input_usage(draft, usage);
    }
    draft.usage(None, None, count(usage, "/output_tokens"), count(usage, "/output_tokens_details/thinking_tokens"));
}

/// The ending a `stop_reason` stands for.
fn ending(draft: &mut Draft, stop_reason: Option<&str>) -> Ending {
    match stop_reason {
        None | Some("end_turn" | "tool_use" | "stop_sequence" | "pause_turn") => Ending::Completed,
        Some("max_tokens") => Ending::Incomplete("max_output_tokens".to_owned()),
        Some("refusal") => Ending::Incomplete("content_filter".to_owned()),
        Some(other) => {
            draft.note(format!("stop_reason `{other}` recorded as incomplete; the mock sends it as `max_tokens`"));
            Ending::Incomplete(other.to_owned())
        }
    }
}

/// The script's code for an `error` object's `type` and message.
fn error_code(data: &Value) -> String {
    let kind = data.pointer("/error/type").and_then(Value::as_str).unwrap_or("api_error");
    let message = data.pointer("/error/message").and_then(Value::as_str);
    code_of(message, |code| error_type(code) == kind).unwrap_or_else(|| "server_error".to_owned())
}
