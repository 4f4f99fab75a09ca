//! Reads an OpenAI Responses event stream: each event is one beat, so every frame is a mark.

use serde_json::Value;

use crate::record::draft::{Draft, Mark};
use crate::record::reader::count;
use crate::script::Ending;

/// Reads one event into `draft`.
pub fn frame(draft: &mut Draft, event: Option<&str>, data: &Value) {
    let kind = data.get("type").and_then(Value::as_str).or(event).unwrap_or_default();
    let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
    let item = data.get("item").unwrap_or(&Value::Null);
    let item_text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    let item_type = item.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "response.created" => draft.mark(Mark::Created),
        "response.in_progress" => draft.mark(Mark::InProgress),
        "response.output_item.added" => match item_type {
            "reasoning" => draft.reasoning_added(),
            "message" => draft.message_added(),
            "function_call" => {
                draft.call_added(&item_text("name").unwrap_or_default(), item_text("call_id"));
            }
            other => draft.note(format!("an output item of type `{other}` was left out")),
        },
        "response.reasoning_summary_part.added" => draft.mark(Mark::ReasoningPartAdded),
        "response.reasoning_summary_text.delta" => draft.reasoning_delta(text("delta")),
        "response.reasoning_summary_text.done" => draft.mark(Mark::ReasoningTextDone),
        "response.reasoning_summary_part.done" => draft.mark(Mark::ReasoningPartDone),
        "response.content_part.added" => draft.mark(Mark::TextPartAdded),
        "response.output_text.delta" => draft.text_delta(text("delta")),
        "response.output_text.done" | "response.refusal.done" => draft.mark(Mark::TextDone),
        "response.refusal.delta" => draft.refusal_delta(text("delta")),
        "response.content_part.done" => draft.mark(Mark::TextPartDone),
        "response.function_call_arguments.delta" => draft.args_delta(text("delta")),
        "response.function_call_arguments.done" => draft.args_done(data.get("arguments").and_then(Value::as_str)),
        "response.output_item.done" => match item_type {
            "reasoning" => draft.reasoning_done(item_text("encrypted_content")),
            "message" => draft.mark(Mark::MessageDone),
            "function_call" => draft.call_done(item.get("arguments").and_then(Value::as_str)),
            _ => {}
        },
        "response.completed" | "response.incomplete" | "response.failed" => {
            let response = data.get("response").unwrap_or(&Value::Null);
            if let Some(usage) = response.get("usage").filter(|usage| usage.is_object()) {
                draft.usage(
                    count(usage, "/input_tokens"),
                    count(usage, "/input_tokens_details/cached_tokens"),
                    count(usage, "/output_tokens"),
                    count(usage, "/output_tokens_details/reasoning_tokens"),
                );
            }
            let text_at = |pointer: &str| response.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
            let ending = match kind {
                "response.completed" => Ending::Completed,
                "response.incomplete" => Ending::Incomplete(
                    text_at("/incomplete_details/reason").unwrap_or_else(|| "max_output_tokens".to_owned()),
                ),
                _ => Ending::Failed(code(draft, text_at("/error/code"))),
            };
            draft.end(ending);
        }
        "error" => {
            let code = code(draft, data.get("code").and_then(Value::as_str).map(str::to_owned));
            draft.end(Ending::Error(code));
        }
        other => draft.note(format!("a `{other}` event was left out")),
    }
}

/// The error code, `server_error` when the event names none.
fn code(draft: &mut Draft, code: Option<String>) -> String {
    code.unwrap_or_else(|| {
        draft.note("an error without a code: recorded as `server_error`");
        "server_error".to_owned()
    })
}
