//! Reads a Gemini `streamGenerateContent?alt=sse` stream or whole `generateContent` answer:
//! thought parts (a signature part closes a reasoning item), text parts, whole
//! `functionCall` parts; `finishReason` ends it; an `error` object is an in-band error.

use serde_json::Value;

use crate::dialect::gemini::error_status;
use crate::record::draft::Draft;
use crate::record::reader::{code_of, count};
use crate::script::Ending;

/// The state between chunks: whether a reasoning item is open (unsigned thoughts in a row are
/// one item: the wire has no boundary between them).
#[derive(Debug, Default)]
pub struct Reader {
    reasoning_open: bool,
}

impl Reader {
    /// Reads one chunk into `draft`.
    pub fn frame(&mut self, draft: &mut Draft, data: &Value) {
        if data.get("error").is_some() {
            draft.end(Ending::Error(error_code(data)));
            return;
        }
        if let Some(usage) = data.get("usageMetadata") {
            usage_of(draft, usage);
        }
        let candidate = data.pointer("/candidates/0").unwrap_or(&Value::Null);
        let finish = candidate.get("finishReason").and_then(Value::as_str);
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            self.part(draft, part, finish.is_some());
        }
        if let Some(reason) = finish {
            let ending = ending(draft, reason);
            draft.end(ending);
        }
    }

    fn part(&mut self, draft: &mut Draft, part: &Value, last: bool) {
        let text = part.get("text").and_then(Value::as_str);
        let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_owned);
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            if !self.reasoning_open {
                draft.reasoning_added();
                self.reasoning_open = true;
            }
            if let Some(text) = text.filter(|text| !text.is_empty()) {
                draft.reasoning_delta(text);
            }
            if signature.is_some() {
                draft.reasoning_done(signature);
                self.reasoning_open = false;
            }
            return;
        }
        self.reasoning_open = false;
        if signature.is_some() {
            draft.note("a thoughtSignature on a text or call part was left out");
        }
        if let Some(call) = part.get("functionCall") {
            let field = |key: &str| call.get(key).and_then(Value::as_str);
            let args = call.get("args").cloned().unwrap_or(Value::Object(serde_json::Map::new()));
            draft.whole_call(field("name").unwrap_or_default(), field("id").map(str::to_owned), &args);
        } else if let Some(text) = text {
            // The last chunk carries an empty text part beside its finish reason.
            if !(text.is_empty() && last) {
                draft.text_delta(text);
            }
        } else {
            let kind = part.as_object().and_then(|part| part.keys().next().cloned()).unwrap_or_default();
            draft.note(format!("a `{kind}` part was left out"));
        }
    }
}

/// Reads a whole `generateContent` answer into `draft`: each text part is one chunk.
pub fn whole(draft: &mut Draft, body: &Value) {
    Reader::default().frame(draft, body);
}

/// `usageMetadata`: the candidates count leaves out the thoughts, which the script's `output`
/// includes.
fn usage_of(draft: &mut Draft, usage: &Value) {
    let thoughts = count(usage, "/thoughtsTokenCount");
    let output = count(usage, "/candidatesTokenCount").map(|candidates| candidates + thoughts.unwrap_or(0));
    draft.usage(count(usage, "/promptTokenCount"), count(usage, "/cachedContentTokenCount"), output, thoughts);
}

/// The ending a `finishReason` stands for.
fn ending(draft: &mut Draft, reason: &str) -> Ending {
    match reason {
        "STOP" => Ending::Completed,
        "MAX_TOKENS" => Ending::Incomplete("max_output_tokens".to_owned()),
        "SAFETY" => Ending::Incomplete("content_filter".to_owned()),
        other => {
            draft.note(format!("finishReason `{other}` recorded as incomplete; the mock sends it as `MAX_TOKENS`"));
            Ending::Incomplete(other.to_ascii_lowercase())
        }
    }
}

/// The script's code for an `error` object's `status` and message.
fn error_code(data: &Value) -> String {
    let status = data.pointer("/error/status").and_then(Value::as_str).unwrap_or("INTERNAL");
    let message = data.pointer("/error/message").and_then(Value::as_str);
    code_of(message, |code| error_status(code).1 == status).unwrap_or_else(|| "server_error".to_owned())
}
