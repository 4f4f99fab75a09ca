//! The Gemini client (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`): the
//! request built from the replay fold's items, and the `GenerateContentResponse` chunks read
//! into the runtime's dialect-neutral [`Reply`] (docs/dialects.md). It shares no code with the
//! mock's encoder, so each checks the other.
//!
//! | on the wire | in the runtime |
//! | --- | --- |
//! | a text part | [`Delta::Text`] |
//! | a `thought: true` part | [`Delta::Reasoning`]; the thoughts up to a `thoughtSignature` (or the next other part) are one [`OutputItem::Reasoning`] |
//! | a `functionCall` part | an [`OutputItem::Call`] (its `id`, else `<responseId>_<n>`) |
//! | `finishReason` `STOP` | [`Finish::Completed`] |
//! | `MAX_TOKENS` | [`Finish::Incomplete`] `max_output_tokens` (TURN-TRUNCATION-EVIDENCE) |
//! | `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`, `LANGUAGE` | [`Finish::Incomplete`] `content_filter` |
//! | `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `TOO_MANY_TOOL_CALLS` | `invalid_response` |
//! | a chunk holding `error` | `provider_http_error`, its `status` named in the OpenAI vocabulary ([`openai_code`]) |
//! | a body that ends before a `finishReason` | `incomplete_stream` |
//! | a chunk that is not JSON | `invalid_response` |

use serde_json::{Value, json};

use crate::provider::body::{CallNames, Envelope, Messages, images, sse_headers};
use crate::provider::decode::Decode;
use crate::provider::{Call, Delta, Finish, OutputItem, ProviderFailure, Reply, Usage, reasoning, sse};

/// The streaming request path for `model` (with its query).
pub fn path(model: &str) -> String {
    format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
}

/// The request of one call, a `GenerateContentRequest` (the runtime holds no credentials, as
/// with every dialect): the instructions as `systemInstruction`, the replay fold's items as
/// `contents` (roles `user` and `model`), the tools as `functionDeclarations`. The model is in
/// the path; Gemini has no prompt cache key in the request, `provider_usage` records the
/// call's all the same.
pub(crate) fn envelope(call: &Call) -> Envelope {
    let declarations: Vec<Value> = call
        .tool_list()
        .iter()
        .map(|tool| json!({"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}))
        .collect();
    let fields = json!({
        "systemInstruction": {"parts": [{"text": call.instructions}]},
        "tools": [{"functionDeclarations": declarations}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": super::MAX_OUTPUT_TOKENS, "thinkingConfig": {"includeThoughts": true}},
    });
    Envelope::new(path(&call.model), sse_headers(), fields, "contents")
}

/// The error code of an HTTP error body (`{"error": {"code", "message", "status"}}`), in the
/// OpenAI vocabulary; none for the statuses that vocabulary names no code for.
pub fn error_code(body: &Value) -> Option<String> {
    body.pointer("/error/status").and_then(Value::as_str).and_then(openai_code).map(str::to_owned)
}

/// The OpenAI error code a Google canonical `status` stands for (the Gemini troubleshooting
/// guide beside OpenAI's error codes), so a failure's Log is the same whatever the wire
/// (docs/contract.md "Dialect-neutral evidence"). An invalid argument, a missing resource or a
/// refused permission has no OpenAI code: its HTTP status says it.
pub fn openai_code(status: &str) -> Option<&'static str> {
    match status {
        "INTERNAL" => Some("server_error"),
        "UNAVAILABLE" => Some("server_is_overloaded"),
        "RESOURCE_EXHAUSTED" => Some("rate_limit_exceeded"),
        "UNAUTHENTICATED" => Some("invalid_api_key"),
        _ => None,
    }
}

/// One replay item into `contents`: user text and function responses are `user` parts; model
/// text, thoughts and function calls are `model` parts; consecutive parts of one role share a
/// content. A function response names its function, found from its call in `names`.
pub(crate) fn push_item(contents: &mut Messages, names: &CallNames, item: &Value) {
    let (role, part) = match (item.get("type").and_then(Value::as_str), item.get("role").and_then(Value::as_str)) {
        (Some("function_call"), _) => {
            let call_id = item["call_id"].as_str().unwrap_or_default();
            let arguments = item["arguments"].as_str().unwrap_or("{}");
            let args = serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({}));
            ("model", json!({"functionCall": {"id": call_id, "name": item["name"], "args": args}}))
        }
        (Some("function_call_output"), _) => {
            let call_id = item["call_id"].as_str().unwrap_or_default();
            let name = names.get(call_id).cloned().unwrap_or(Value::Null);
            let response = json!({"output": item["output"]});
            ("user", json!({"functionResponse": {"id": call_id, "name": name, "response": response}}))
        }
        (Some("reasoning"), _) => {
            let mut part = json!({"text": reasoning::text(item), "thought": true});
            if let Some(signature) = reasoning::signature(item) {
                part["thoughtSignature"] = json!(signature);
            }
            ("model", part)
        }
        (_, Some("assistant")) => ("model", json!({"text": message_text(item)})),
        (_, Some(_)) => ("user", json!({"text": message_text(item)})),
        _ => return,
    };
    contents.join_or_push(role, "parts", part);
    // A user message's images follow its text, each an `inlineData` part (camelCase, as the
    // rest of the body; the API also reads `inline_data`).
    for (mime_type, data) in images(item) {
        contents.join_or_push("user", "parts", json!({"inlineData": {"mimeType": mime_type, "data": data}}));
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

/// Reads `GenerateContentResponse` chunks out of SSE frames until a `finishReason`.
#[derive(Default)]
pub struct Decoder {
    decoder: sse::Decoder,
    text: String,
    items: Vec<OutputItem>,
    /// Thought text since the last reasoning item closed.
    thought: Option<String>,
    usage: Option<Usage>,
    n_calls: usize,
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
        let chunk: Value = serde_json::from_str(&frame.data)
            .map_err(|error| ProviderFailure::invalid(&format!("data is not JSON ({error})"), &frame.data))?;
        if let Some(error) = chunk.get("error") {
            let status = error.get("status").and_then(Value::as_str).unwrap_or("UNKNOWN");
            let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
            // A status the OpenAI vocabulary has no code for is named as the wire names it.
            return Err(ProviderFailure::reported(openai_code(status).unwrap_or(status), message));
        }
        if let Some(usage) = chunk.get("usageMetadata") {
            self.usage = Some(read_usage(usage));
        }
        let candidate = chunk.pointer("/candidates/0").cloned().unwrap_or(Value::Null);
        let parts =
            candidate.pointer("/content/parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for part in parts {
            self.part(part, chunk.get("responseId").and_then(Value::as_str), on_delta)
                .map_err(|reason| ProviderFailure::invalid(reason, &frame.data))?;
        }
        let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) else {
            return Ok(None);
        };
        let finish = match reason {
            "STOP" => Finish::Completed,
            "MAX_TOKENS" => Finish::Incomplete("max_output_tokens".to_owned()),
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" | "LANGUAGE" => {
                Finish::Incomplete("content_filter".to_owned())
            }
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => {
                return Err(ProviderFailure::invalid(
                    &format!("the model's function call was refused ({reason})"),
                    &frame.data,
                ));
            }
            other => Finish::Incomplete(other.to_ascii_lowercase()),
        };
        self.close_thought(None);
        Ok(Some(Reply {
            text: std::mem::take(&mut self.text),
            items: std::mem::take(&mut self.items),
            usage: self.usage,
            finish,
            attempts: 1,
        }))
    }
}

impl Decoder {
    fn part(
        &mut self,
        part: &Value,
        response_id: Option<&str>,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<(), &'static str> {
        let text = part.get("text").and_then(Value::as_str);
        let signature = part.get("thoughtSignature").and_then(Value::as_str);
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            let thought = self.thought.get_or_insert_with(String::new);
            if let Some(chunk) = text.filter(|chunk| !chunk.is_empty()) {
                thought.push_str(chunk);
                on_delta(Delta::Reasoning(chunk.to_owned()));
            }
            if signature.is_some() {
                self.close_thought(signature);
            }
            return Ok(());
        }
        // A signature on a text or call part belongs to the thinking before it.
        if self.thought.is_some() || signature.is_some() {
            self.close_thought(signature);
        }
        if let Some(call) = part.get("functionCall") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty())
                .ok_or("a functionCall without name")?;
            let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
            if !args.is_object() {
                return Err("functionCall args are not an object");
            }
            let call_id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("{}_{}", response_id.unwrap_or("call"), self.n_calls),
            };
            self.n_calls += 1;
            self.items.push(OutputItem::Call { call_id, name: name.to_owned(), args });
        } else if let Some(chunk) = text.filter(|chunk| !chunk.is_empty()) {
            self.text.push_str(chunk);
            on_delta(Delta::Text(chunk.to_owned()));
        }
        Ok(())
    }

    /// Ends the open reasoning item, if any (or starts and ends one for a lone signature).
    fn close_thought(&mut self, signature: Option<&str>) {
        let text = self.thought.take();
        if text.is_some() || signature.is_some() {
            self.items.push(OutputItem::Reasoning(reasoning::item(&text.unwrap_or_default(), signature)));
        }
    }
}

/// `usageMetadata`: the prompt count includes cached tokens; thoughts are counted apart from
/// the candidates, so the output is their sum.
fn read_usage(usage: &Value) -> Usage {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (count("promptTokenCount"), count("candidatesTokenCount") + count("thoughtsTokenCount"));
    Usage {
        input,
        cached: count("cachedContentTokenCount"),
        output,
        reasoning: count("thoughtsTokenCount"),
        total: count("totalTokenCount").max(input.saturating_add(output)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::ErrorKind;
    use crate::provider::{Dialect, Transcript, WireRequest};

    fn read(chunks: &[Value]) -> (Vec<Delta>, Result<Option<Reply>, ProviderFailure>) {
        let mut bytes = String::new();
        for chunk in chunks {
            bytes.push_str(&format!("data: {chunk}\r\n\r\n"));
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

    fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}], "responseId": "r9"})
    }

    fn last(reason: &str) -> Value {
        json!({
            "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": reason, "index": 0}],
            "usageMetadata": {"promptTokenCount": 7, "cachedContentTokenCount": 3, "candidatesTokenCount": 3, "thoughtsTokenCount": 2, "totalTokenCount": 12},
        })
    }

    #[test]
    fn thoughts_text_and_calls_become_the_neutral_reply() {
        let (deltas, reply) = read(&[
            parts(json!([{"text": "hm", "thought": true}])),
            parts(json!([{"thought": true, "thoughtSignature": "sig"}])),
            parts(json!([{"text": "Hi"}])),
            parts(
                json!([{"functionCall": {"id": "call_1", "name": "read", "args": {"path": "a"}}}, {"functionCall": {"name": "list"}}]),
            ),
            last("STOP"),
        ]);
        let reply = reply.unwrap().unwrap();
        assert_eq!(deltas, [Delta::Reasoning("hm".into()), Delta::Text("Hi".into())]);
        assert_eq!(reply.text, "Hi");
        assert_eq!(
            reply.items,
            [
                OutputItem::Reasoning(reasoning::item("hm", Some("sig"))),
                OutputItem::Call { call_id: "call_1".into(), name: "read".into(), args: json!({"path": "a"}) },
                OutputItem::Call { call_id: "r9_1".into(), name: "list".into(), args: json!({}) },
            ]
        );
        assert_eq!(reply.usage, Some(Usage { input: 7, cached: 3, output: 5, reasoning: 2, total: 12 }));
        assert_eq!(reply.finish, Finish::Completed);
    }

    #[test]
    fn finish_reasons_and_faults() {
        let finish = |reason: &str| read(&[last(reason)]).1.map(|reply| reply.unwrap().finish);
        assert_eq!(finish("MAX_TOKENS").unwrap(), Finish::Incomplete("max_output_tokens".into()));
        assert_eq!(finish("SAFETY").unwrap(), Finish::Incomplete("content_filter".into()));
        assert_eq!(finish("MALFORMED_FUNCTION_CALL").unwrap_err().kind, ErrorKind::InvalidResponse);

        let error = json!({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}});
        let (deltas, failure) = read(&[parts(json!([{"text": "Hal"}])), error]);
        let failure = failure.unwrap_err();
        assert_eq!(deltas.len(), 1);
        assert_eq!(
            (failure.kind, failure.details["code"].clone()),
            (ErrorKind::ProviderHttpError, json!("server_error"))
        );

        assert_eq!(read(&[parts(json!([{"text": "Hal"}]))]).1.unwrap_err().kind, ErrorKind::IncompleteStream);
        assert_eq!(read_bytes(b"data: {not json\r\n\r\n").1.unwrap_err().kind, ErrorKind::InvalidResponse);
        let bad_call = parts(json!([{"functionCall": {"name": "read", "args": [1]}}]));
        assert_eq!(read(&[bad_call]).1.unwrap_err().kind, ErrorKind::InvalidResponse);
    }

    #[test]
    fn the_request_uses_user_and_model_roles_and_names_function_responses() {
        let input = vec![
            json!({"role": "user", "content": [{"type": "input_text", "text": "go"}]}),
            reasoning::item("plan", Some("sig")),
            json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "A"}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        ];
        let call = Call::with_read_tool("gemini-x", "Be brief");
        let WireRequest { path: sent_to, body, .. } = Transcript::of(Dialect::Gemini, &input).request(&call, &[]);
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(sent_to, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse");
        assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "Be brief"}]}));
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [{"name": "read", "description": "Read", "parameters": {"type": "object"}}]}])
        );
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [
                    {"text": "plan", "thought": true, "thoughtSignature": "sig"},
                    {"functionCall": {"id": "c1", "name": "read", "args": {"path": "a"}}},
                ]},
                {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "read", "response": {"output": "A"}}}]},
                {"role": "model", "parts": [{"text": "done"}]},
            ])
        );
        assert_eq!(
            error_code(&json!({"error": {"code": 503, "status": "UNAVAILABLE"}})).as_deref(),
            Some("server_is_overloaded")
        );
        assert_eq!(error_code(&json!({"error": {"code": 400, "status": "INVALID_ARGUMENT"}})), None);
    }
}
