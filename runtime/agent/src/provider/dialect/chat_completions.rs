//! The OpenAI Chat Completions dialect: `POST /v1/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, decoded from `chat.completion.chunk` frames until
//! `data: [DONE]` (OpenAI API reference, "Create chat completion" and "The chat completion
//! chunk object").
//!
//! The replayed conversation becomes `messages`: the instructions as a `system` message, user
//! messages, assistant messages carrying the `tool_calls` that follow them, and `tool`
//! messages with each result. Chat Completions has no reasoning items, so none are sent or
//! received. `finish_reason` maps to the runtime's [`Finish`]: `stop` and `tool_calls` are a
//! clean end, `length` is `max_output_tokens`, `content_filter` is `content_filter`. A
//! `delta.refusal` (the model declines in so many words) is text shown live and, ended
//! cleanly, `content_filter` too: the Responses vocabulary's name for a model that declines.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::provider::body::{Envelope, Messages, images, sse_headers};
use crate::provider::decode::Decode;
use crate::provider::{Call, Delta, Finish, OutputItem, ProviderFailure, Reply, Usage, sse};

/// The request of one call, around its `messages`: the instructions as the `system` message
/// that leads them.
pub(crate) fn envelope(call: &Call) -> Envelope {
    let tools: Vec<Value> = call
        .tool_list()
        .iter()
        .map(|tool| {
            json!({"type": "function", "function": {
                "name": tool.get("name").cloned().unwrap_or(Value::Null),
                "description": tool.get("description").cloned().unwrap_or(Value::Null),
                "parameters": tool.get("parameters").cloned().unwrap_or_else(|| json!({})),
            }})
        })
        .collect();
    let fields = json!({
        "model": call.model,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "max_completion_tokens": super::MAX_OUTPUT_TOKENS,
        "stream": true,
        "stream_options": {"include_usage": true},
        "prompt_cache_key": call.cache_key,
    });
    Envelope::new("/v1/chat/completions", sse_headers(), fields, "messages")
        .leading(&json!({"role": "system", "content": call.instructions}))
}

/// One replay item into `messages`.
pub(crate) fn push_item(messages: &mut Messages, item: &Value) {
    let text = || content_text(item.get("content"));
    match (item.get("type").and_then(Value::as_str), item.get("role").and_then(Value::as_str)) {
        (Some("function_call"), _) => {
            let tool_call = json!({
                "id": item.get("call_id").cloned().unwrap_or(Value::Null),
                "type": "function",
                "function": {
                    "name": item.get("name").cloned().unwrap_or(Value::Null),
                    "arguments": item.get("arguments").cloned().unwrap_or_else(|| json!("{}")),
                },
            });
            // Calls join the assistant message right before them, as the model sent them.
            match messages.last_mut().and_then(Value::as_object_mut) {
                Some(last) if last.get("role").and_then(Value::as_str) == Some("assistant") => {
                    push_tool_call(last, tool_call);
                }
                _ => {
                    let mut message = Map::new();
                    message.insert("role".into(), json!("assistant"));
                    message.insert("content".into(), Value::Null);
                    push_tool_call(&mut message, tool_call);
                    messages.push(Value::Object(message));
                }
            }
        }
        (Some("function_call_output"), _) => messages.push(json!({
            "role": "tool",
            "tool_call_id": item.get("call_id").cloned().unwrap_or(Value::Null),
            "content": item.get("output").cloned().unwrap_or_else(|| json!("")),
        })),
        (Some("reasoning"), _) => {}
        (_, Some("assistant")) => messages.push(json!({"role": "assistant", "content": text()})),
        // A user message with images is content parts: its text, then each image as a
        // `data:` URL.
        (_, Some(role)) if !images(item).is_empty() => {
            let mut parts = vec![json!({"type": "text", "text": text()})];
            parts.extend(images(item).into_iter().map(|(mime_type, data)| {
                json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
            }));
            messages.push(json!({"role": role, "content": parts}));
        }
        (_, Some(role)) => messages.push(json!({"role": role, "content": text()})),
        _ => {}
    }
}

fn push_tool_call(message: &mut Map<String, Value>, tool_call: Value) {
    match message.get_mut("tool_calls") {
        Some(Value::Array(calls)) => calls.push(tool_call),
        _ => {
            message.insert("tool_calls".into(), json!([tool_call]));
        }
    }
}

/// A message's text: a string, or its parts' `text` joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// The `error.code` of an error body (the OpenAI error object, as for Responses).
pub fn error_code(body: &Value) -> Option<String> {
    body.pointer("/error/code").and_then(Value::as_str).map(str::to_owned)
}

/// A tool call being assembled from its fragments.
#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reads `chat.completion.chunk` frames until `data: [DONE]`.
#[derive(Default)]
pub struct Decoder {
    decoder: sse::Decoder,
    text: String,
    /// Tool calls by their `index`.
    calls: BTreeMap<u64, PendingCall>,
    finish: Option<Finish>,
    usage: Option<Usage>,
    /// A `delta.refusal` came: the model declined.
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
        let data = frame.data.as_str();
        if data == "[DONE]" {
            return self.done().map(Some);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|error| ProviderFailure::invalid(&format!("data is not JSON ({error})"), data))?;
        if let Some(error) = chunk.get("error") {
            let code = error.get("code").and_then(Value::as_str).unwrap_or("unknown");
            let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
            return Err(ProviderFailure::reported(code, message));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(read_usage(usage));
        }
        for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
            let delta = choice.get("delta");
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str)
                && !text.is_empty()
            {
                self.text.push_str(text);
                on_delta(Delta::Text(text.to_owned()));
            }
            if let Some(refusal) = delta.and_then(|d| d.get("refusal")).and_then(Value::as_str)
                && !refusal.is_empty()
            {
                self.refused = true;
                self.text.push_str(refusal);
                on_delta(Delta::Text(refusal.to_owned()));
            }
            for fragment in delta.and_then(|d| d.get("tool_calls")).and_then(Value::as_array).into_iter().flatten() {
                let index = fragment
                    .get("index")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ProviderFailure::invalid("a tool_calls fragment has no index", data))?;
                let call = self.calls.entry(index).or_default();
                let text = |pointer: &str| fragment.pointer(pointer).and_then(Value::as_str);
                if let Some(id) = text("/id") {
                    call.id = id.to_owned();
                }
                if let Some(name) = text("/function/name") {
                    call.name.push_str(name);
                }
                if let Some(arguments) = text("/function/arguments") {
                    call.arguments.push_str(arguments);
                }
            }
            match choice.get("finish_reason").and_then(Value::as_str) {
                None => {}
                Some("stop" | "tool_calls" | "function_call") => self.finish = Some(Finish::Completed),
                Some("length") => self.finish = Some(Finish::Incomplete("max_output_tokens".to_owned())),
                Some("content_filter") => self.finish = Some(Finish::Incomplete("content_filter".to_owned())),
                Some(other) => self.finish = Some(Finish::Incomplete(other.to_owned())),
            }
        }
        Ok(None)
    }
}

impl Decoder {
    /// The reply at `[DONE]`: a stream without a `finish_reason` did not end cleanly.
    fn done(&mut self) -> Result<Reply, ProviderFailure> {
        let finish = match self.finish.take() {
            Some(Finish::Completed) if self.refused => Finish::Incomplete("content_filter".to_owned()),
            Some(finish) => finish,
            None => return Err(ProviderFailure::invalid("the stream sent [DONE] without a finish_reason", "[DONE]")),
        };
        let mut items = Vec::new();
        for call in std::mem::take(&mut self.calls).into_values() {
            let parses = serde_json::from_str::<Value>(&call.arguments).is_ok_and(|args| args.is_object());
            if matches!(finish, Finish::Incomplete(_)) && !parses {
                // The output limit cut the call's arguments short: a call the model never
                // finished is dropped, never run, as the other dialects' decoders drop a call
                // whose item never ended; the reply is the truncated answer it is.
                continue;
            }
            if call.id.is_empty() || call.name.is_empty() {
                return Err(ProviderFailure::invalid("malformed tool call", &call.arguments));
            }
            items.push(OutputItem::call(&call.id, &call.name, &call.arguments));
        }
        Ok(Reply { text: std::mem::take(&mut self.text), items, usage: self.usage, finish, attempts: 1 })
    }
}

/// `CompletionUsage` in the runtime's form.
fn read_usage(usage: &Value) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (number("/prompt_tokens"), number("/completion_tokens"));
    Usage {
        input,
        cached: number("/prompt_tokens_details/cached_tokens"),
        output,
        reasoning: number("/completion_tokens_details/reasoning_tokens"),
        total: usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input.saturating_add(output)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Dialect, Transcript};

    fn call() -> Call {
        Call::with_read_tool("m", "Be brief.")
    }

    #[test]
    fn the_fold_becomes_messages() {
        let input = vec![
            json!({"role": "user", "content": [{"type": "input_text", "text": "Go"}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]}),
            json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "A"}),
            json!({"type": "reasoning", "summary": []}),
        ];
        let request = Transcript::of(Dialect::ChatCompletions, &input).request(&call(), &[]);
        assert_eq!(request.path, "/v1/chat/completions");
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(messages[1], json!({"role": "user", "content": "Go"}));
        assert_eq!(messages[2]["content"], "Reading.");
        assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "c1", "content": "A"}));
        assert_eq!(body["tools"][0]["function"]["name"], "read");
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    fn decode(bytes: &str) -> (Vec<Delta>, Result<Option<Reply>, ProviderFailure>) {
        let mut deltas = Vec::new();
        let mut decoder = Decoder::default();
        let result = decoder.push(bytes.as_bytes(), &mut |delta| deltas.push(delta));
        (deltas, result)
    }

    #[test]
    fn a_stream_with_text_calls_and_usage() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":5,\"total_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, reply) = decode(stream);
        assert_eq!(deltas, [Delta::Text("Hi".into())]);
        let reply = reply.ok().flatten().unwrap_or_else(|| unreachable!());
        assert_eq!(reply.text, "Hi");
        assert_eq!(reply.finish, Finish::Completed);
        assert_eq!(
            reply.items,
            [OutputItem::Call { call_id: "c1".into(), name: "read".into(), args: json!({"path": "a"}) }]
        );
        assert_eq!(reply.usage, Some(Usage { input: 7, cached: 3, output: 5, reasoning: 0, total: 12 }));
    }

    #[test]
    fn endings_and_faults() {
        let length =
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        // A call the limit cut mid-arguments is dropped, not run and not a malformed reply.
        let cut = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"{\\\"path\\\":\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
        );
        let reply = decode(cut).1.ok().flatten().expect("a truncated reply");
        assert!(reply.items.is_empty() && reply.finish == Finish::Incomplete("max_output_tokens".to_owned()));
        // A `delta.refusal` is text, and its clean `stop` a content filter's.
        let refusal = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"No.\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
        );
        let reply = decode(refusal).1.ok().flatten().expect("a reply");
        assert_eq!((reply.text.as_str(), reply.finish), ("No.", Finish::Incomplete("content_filter".into())));
        // A whole call whose arguments do not parse, ended cleanly, is the model's call as it
        // made it (its text kept), never a malformed reply (ACP-INVALID-ARGUMENTS).
        let invalid = cut.replace("length", "tool_calls");
        let reply = decode(&invalid).1.ok().flatten().expect("a reply");
        assert_eq!(
            reply.items[0],
            OutputItem::Call { call_id: "c1".into(), name: "write".into(), args: json!("{\"path\":") }
        );
        let reply = decode(length).1.ok().flatten().map(|reply| reply.finish);
        assert_eq!(reply, Some(Finish::Incomplete("max_output_tokens".into())));
        let error = "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":\"server_error\"}}\n\n";
        let failure = decode(error).1.err().map(|failure| failure.message);
        assert_eq!(failure.as_deref(), Some("the provider reported `server_error` in the stream: boom"));
        assert!(decode("data: {not json\n\n").1.is_err());
        assert!(decode("data: [DONE]\n\n").1.is_err(), "[DONE] without a finish_reason");
        let (_, pending) = decode("data: {\"choices\":[]}\n\n");
        assert!(matches!(pending, Ok(None)));
    }
}
