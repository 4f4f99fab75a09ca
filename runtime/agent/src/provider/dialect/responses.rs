//! The OpenAI Responses API dialect: the request body (pixir.md 3.1) and the SSE event
//! decoder, until `response.completed`, `response.incomplete`, `response.failed` or `error`.
//! A `refusal` content part (`response.refusal.delta`, the model declines in so many words) is
//! text shown live and, completed, `content_filter`: the vocabulary's name for a model that
//! declines, as Anthropic's `refusal` stop reason reads.

use serde_json::{Value, json};

use crate::provider::body::{Envelope, sse_headers};
use crate::provider::decode::Decode;
use crate::provider::{Call, Delta, Finish, OutputItem, ProviderFailure, Reply, Usage, sse};

/// The Responses API request of one call, around its `input` items; keys sort on the wire.
pub(crate) fn envelope(call: &Call) -> Envelope {
    let fields = json!({
        "model": call.model,
        "instructions": call.instructions,
        "tools": call.tools,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "max_output_tokens": super::MAX_OUTPUT_TOKENS,
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": call.cache_key,
    });
    Envelope::new("/v1/responses", sse_headers(), fields, "input")
}

/// The `error.code` of an HTTP error body.
pub fn error_code(body: &Value) -> Option<String> {
    body.pointer("/error/code").and_then(Value::as_str).map(str::to_owned)
}

/// Reads Responses API events out of SSE frames until a terminal event.
#[derive(Default)]
pub struct Decoder {
    decoder: sse::Decoder,
    text: String,
    items: Vec<OutputItem>,
    /// A `response.refusal.delta` came: the model declined.
    refused: bool,
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
        if frame.data == "[DONE]" {
            return Ok(None);
        }
        let event: Value = serde_json::from_str(&frame.data)
            .map_err(|error| ProviderFailure::invalid(&format!("data is not JSON ({error})"), &frame.data))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = &frame.event
            && name != kind
        {
            let reason = format!("event name `{name}` differs from type `{kind}`");
            return Err(ProviderFailure::invalid(&reason, &frame.data));
        }
        match kind {
            "response.output_text.delta" => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                self.text.push_str(delta);
                on_delta(Delta::Text(delta.to_owned()));
            }
            "response.refusal.delta" => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                self.refused = true;
                self.text.push_str(delta);
                on_delta(Delta::Text(delta.to_owned()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                on_delta(Delta::Reasoning(delta.to_owned()));
            }
            "response.output_item.done" => {
                let item = event.get("item").cloned().unwrap_or(Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => self.items.push(OutputItem::Reasoning(reasoning(&item))),
                    Some("function_call") => {
                        let call = function_call(&item)
                            .ok_or_else(|| ProviderFailure::invalid("malformed function_call item", &frame.data))?;
                        self.items.push(call);
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response");
                let finish =
                    match response.and_then(|r| r.pointer("/incomplete_details/reason")).and_then(Value::as_str) {
                        Some(reason) if kind == "response.incomplete" => Finish::Incomplete(reason.to_owned()),
                        _ if kind == "response.incomplete" => Finish::Incomplete("unknown".to_owned()),
                        _ if self.refused => Finish::Incomplete("content_filter".to_owned()),
                        _ => Finish::Completed,
                    };
                return Ok(Some(Reply {
                    text: std::mem::take(&mut self.text),
                    items: std::mem::take(&mut self.items),
                    usage: response.and_then(|r| r.get("usage")).and_then(usage),
                    finish,
                    attempts: 1,
                }));
            }
            "response.failed" | "error" => {
                let error = if kind == "error" { Some(&event) } else { event.pointer("/response/error") };
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("unknown");
                let message = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("no message");
                return Err(ProviderFailure::reported(code, message));
            }
            _ => {}
        }
        Ok(None)
    }
}

/// A finished reasoning item in the runtime's form: its summary and encrypted content, without
/// the item id (with `store: false` the id names nothing the Provider kept).
fn reasoning(item: &Value) -> Value {
    let mut reasoning = json!({
        "type": "reasoning",
        "summary": item.get("summary").cloned().unwrap_or_else(|| json!([])),
    });
    if let Some(encrypted) = item.get("encrypted_content").filter(|value| value.is_string()) {
        reasoning["encrypted_content"] = encrypted.clone();
    }
    reasoning
}

fn function_call(item: &Value) -> Option<OutputItem> {
    let call_id = item.get("call_id")?.as_str()?;
    let name = item.get("name")?.as_str()?;
    let arguments = item.get("arguments")?.as_str()?;
    (!call_id.is_empty() && !name.is_empty()).then(|| OutputItem::call(call_id, name, arguments))
}

/// The `usage` of a terminal event; `None` when absent or null.
fn usage(usage: &Value) -> Option<Usage> {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    usage.is_object().then(|| {
        let (input, output) = (number("/input_tokens"), number("/output_tokens"));
        Usage {
            input,
            cached: number("/input_tokens_details/cached_tokens"),
            output,
            reasoning: number("/output_tokens_details/reasoning_tokens"),
            total: usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input.saturating_add(output)),
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A refusal part's deltas are text shown live, and the completed response is a
    /// `content_filter` stop, as Anthropic's `refusal` stop reason reads.
    #[test]
    fn a_refusal_is_shown_and_ends_as_a_content_filter() {
        let mut decoder = Decoder::default();
        let frames = [
            json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "No."}),
            json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "refusal": "No."}),
            json!({"type": "response.completed", "response": {}}),
        ];
        let bytes: String = frames.iter().map(|frame| format!("data: {frame}\n\n")).collect();
        let mut deltas = Vec::new();
        let reply = decoder.push(bytes.as_bytes(), &mut |delta| deltas.push(delta)).unwrap().unwrap();
        assert_eq!(deltas, [Delta::Text("No.".into())]);
        assert_eq!((reply.text.as_str(), reply.finish), ("No.", Finish::Incomplete("content_filter".into())));
    }

    /// A finished `function_call` item whose `arguments` do not parse, in a response that
    /// completed, is the model's call as it made it (its text kept), never a malformed reply
    /// (ACP-INVALID-ARGUMENTS); one without a `call_id` still is malformed.
    #[test]
    fn a_call_whose_arguments_do_not_parse_is_kept_as_text() {
        let read = |item: Value| {
            let mut decoder = Decoder::default();
            let frames = [
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
                json!({"type": "response.completed", "response": {}}),
            ];
            let bytes: String = frames.iter().map(|frame| format!("data: {frame}\n\n")).collect();
            decoder.push(bytes.as_bytes(), &mut |_| {})
        };
        let call = json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\": \"a"});
        let reply = read(call).unwrap().unwrap();
        assert_eq!(
            reply.items,
            [OutputItem::Call { call_id: "c1".into(), name: "read".into(), args: json!("{\"path\": \"a") }]
        );
        assert!(read(json!({"type": "function_call", "name": "read", "arguments": "{}"})).is_err());
    }
}
