//! Reads an OpenAI Chat Completions chunk stream or whole `chat.completion`: the role chunk,
//! content and tool-call fragments are the beats that have frames; `finish_reason` (and the
//! usage chunk with `stream_options.include_usage`) end it; an `error` object is an in-band error.

use serde_json::Value;

use crate::record::draft::{Draft, Mark};
use crate::record::reader::count;
use crate::script::Ending;

/// Reads one chunk into `draft`.
pub fn frame(draft: &mut Draft, data: &Value) {
    if ended_in_error(draft, data) {
        return;
    }
    usage(draft, data);
    let Some(choice) = data.pointer("/choices/0") else { return };
    let delta = choice.get("delta").unwrap_or(&Value::Null);
    if delta.get("role").is_some() {
        draft.mark(Mark::Created);
    }
    if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        draft.text_delta(text);
    }
    if let Some(refusal) = delta.get("refusal").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        draft.refusal_delta(refusal);
    }
    if delta.get("reasoning_content").or_else(|| delta.get("reasoning")).is_some_and(|r| !r.is_null()) {
        draft.note("reasoning in Chat Completions chunks was left out: the mock's Chat Completions sends none");
    }
    for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let id = call.get("id").and_then(Value::as_str);
        let name = call.pointer("/function/name").and_then(Value::as_str);
        if id.is_some() || name.is_some() {
            draft.call_added(name.unwrap_or_default(), id.map(str::to_owned));
        }
        if let Some(fragment) = call.pointer("/function/arguments").and_then(Value::as_str).filter(|f| !f.is_empty()) {
            draft.args_delta(fragment);
        }
    }
    if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
        let ending = finish(draft, reason);
        draft.end(ending);
    }
}

/// Reads a whole `chat.completion` into `draft`: its text is one chunk.
pub fn whole(draft: &mut Draft, body: &Value) {
    if ended_in_error(draft, body) {
        return;
    }
    usage(draft, body);
    let message = body.pointer("/choices/0/message").unwrap_or(&Value::Null);
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        draft.text_delta(text);
    }
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        draft.refusal_delta(refusal);
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let field = |pointer: &str| call.pointer(pointer).and_then(Value::as_str);
        draft.call_added(field("/function/name").unwrap_or_default(), field("/id").map(str::to_owned));
        draft.call_done(field("/function/arguments"));
    }
    let reason = body.pointer("/choices/0/finish_reason").and_then(Value::as_str).unwrap_or("stop");
    let ending = finish(draft, reason);
    draft.end(ending);
}

fn usage(draft: &mut Draft, data: &Value) {
    if let Some(usage) = data.get("usage").filter(|usage| usage.is_object()) {
        draft.usage(
            count(usage, "/prompt_tokens"),
            count(usage, "/prompt_tokens_details/cached_tokens"),
            count(usage, "/completion_tokens"),
            count(usage, "/completion_tokens_details/reasoning_tokens"),
        );
    }
}

/// The ending a `finish_reason` stands for.
fn finish(draft: &mut Draft, reason: &str) -> Ending {
    match reason {
        "stop" | "tool_calls" | "function_call" => Ending::Completed,
        "length" => Ending::Incomplete("max_output_tokens".to_owned()),
        "content_filter" => Ending::Incomplete("content_filter".to_owned()),
        other => {
            draft.note(format!("finish_reason `{other}` recorded as incomplete; the mock sends it as `length`"));
            Ending::Incomplete(other.to_owned())
        }
    }
}

/// Ends `draft` with the in-band error `data` is (the same object as an HTTP error body), if it is one.
fn ended_in_error(draft: &mut Draft, data: &Value) -> bool {
    let Some(error) = data.get("error") else { return false };
    let code = code(draft, error);
    draft.end(Ending::Error(code));
    true
}

/// An error object's code (its `type` when it has none).
fn code(draft: &mut Draft, error: &Value) -> String {
    let named = ["code", "type"].iter().find_map(|key| error.get(*key).and_then(Value::as_str));
    named.map(str::to_owned).unwrap_or_else(|| {
        draft.note("an error without a code: recorded as `server_error`");
        "server_error".to_owned()
    })
}
