//! One recorded answer read back into a [`Recorded`] response: an HTTP error by its status and
//! `retry-after`, a stream frame by frame through its dialect's reader (one module per
//! dialect under `reader/`), a whole JSON answer at once. What cannot be read is never an
//! error: the agent got the bytes unchanged anyway, so the response says what could be read
//! (`malformed` when nothing could) and its notes say what could not.

use std::time::Duration;

use serde_json::Value;

use crate::dialect::{self, Dialect};
use crate::record::draft::{BodyEnd, Draft, Recorded};
use crate::record::sse;
use crate::record::timing::Arrivals;
use crate::script::{Ending, Response};

pub mod anthropic_messages;
pub mod chat_completions;
pub mod gemini;
pub mod responses;

/// What the Provider answered one request, as the recorder saw it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The HTTP status.
    pub status: u16,
    /// The `content-type` header.
    pub content_type: Option<&'a str>,
    /// The `retry-after` header.
    pub retry_after: Option<&'a str>,
    /// The body bytes as they arrived.
    pub body: &'a [u8],
    /// How the body ended.
    pub end: BodyEnd,
    /// When its bytes arrived.
    pub arrivals: &'a Arrivals,
}

/// The response that replays `answer` in `dialect`, each wait of at least `min_gap` before a
/// frame kept as a pause (an HTTP error keeps none: the mock sends its head at once).
pub fn read(dialect: Dialect, answer: &Answer<'_>, min_gap: Duration) -> Recorded {
    if answer.status >= 400 {
        return http_error(dialect, answer);
    }
    let mut draft = Draft::default();
    if !(200..300).contains(&answer.status) {
        draft.note(format!("HTTP {} is neither an answer nor an error the mock can send", answer.status));
    }
    let content_type = answer.content_type.unwrap_or_default();
    let ended_at = answer.arrivals.ended();
    if content_type.starts_with("text/event-stream") {
        stream(dialect, answer.body, answer.arrivals, &mut draft);
    } else if let Ok(body) = serde_json::from_slice::<Value>(answer.body) {
        // A whole answer is read when it has all come: its wait is one pause before its body.
        draft.at(ended_at);
        draft.whole();
        match dialect {
            Dialect::Responses => {
                draft.note("a whole Responses answer: the mock always streams, so it was not read");
                draft.end(Ending::Malformed);
            }
            Dialect::ChatCompletions => chat_completions::whole(&mut draft, &body),
            Dialect::AnthropicMessages => anthropic_messages::whole(&mut draft, &body),
            Dialect::Gemini => gemini::whole(&mut draft, &body),
        }
    } else {
        draft.note(format!(
            "the body is neither an event stream nor JSON ({content_type:?}), recorded as `malformed`: {}",
            preview(answer.body)
        ));
        draft.at(ended_at);
        draft.end(Ending::Malformed);
    }
    draft.finish(dialect, answer.end, ended_at, min_gap)
}

/// Reads each frame of an event stream, at the time it arrived; the first frame that is not
/// JSON ends it `malformed`.
fn stream(dialect: Dialect, body: &[u8], arrivals: &Arrivals, draft: &mut Draft) {
    let (frames, torn) = sse::frames(body);
    let mut reader = Reader::new(dialect);
    for (index, frame) in frames.iter().enumerate() {
        if frame.data == "[DONE]" {
            continue;
        }
        draft.at(arrivals.at(frame.end));
        let Ok(data) = serde_json::from_str::<Value>(&frame.data) else {
            draft.note(format!(
                "frame {index} is not JSON, recorded as `malformed`: {}",
                preview(frame.data.as_bytes())
            ));
            if index + 1 < frames.len() {
                draft.note(format!("the {} frame(s) after it were left out", frames.len() - index - 1));
            }
            draft.end(Ending::Malformed);
            return;
        };
        reader.frame(draft, frame.event.as_deref(), &data);
    }
    if torn > 0 {
        draft.note(format!("the body ended {torn} bytes into a frame, which was left out"));
    }
}

/// A dialect's stream reader, with the state it keeps between frames.
enum Reader {
    Responses,
    ChatCompletions,
    AnthropicMessages(anthropic_messages::Reader),
    Gemini(gemini::Reader),
}

impl Reader {
    fn new(dialect: Dialect) -> Reader {
        match dialect {
            Dialect::Responses => Reader::Responses,
            Dialect::ChatCompletions => Reader::ChatCompletions,
            Dialect::AnthropicMessages => Reader::AnthropicMessages(Default::default()),
            Dialect::Gemini => Reader::Gemini(Default::default()),
        }
    }

    fn frame(&mut self, draft: &mut Draft, event: Option<&str>, data: &Value) {
        match self {
            Reader::Responses => responses::frame(draft, event, data),
            Reader::ChatCompletions => chat_completions::frame(draft, data),
            Reader::AnthropicMessages(reader) => reader.frame(draft, event, data),
            Reader::Gemini(reader) => reader.frame(draft, data),
        }
    }
}

/// An HTTP error: its status and `retry-after`; the mock words the body its own way, so a
/// body other than the mock's own is kept as a note.
fn http_error(dialect: Dialect, answer: &Answer<'_>) -> Recorded {
    let mut notes = Vec::new();
    let status = if answer.status <= 599 {
        answer.status
    } else {
        notes.push(format!("HTTP {} is past 599: recorded as 500", answer.status));
        500
    };
    let retry_after = answer.retry_after.and_then(|value| match value.trim().parse::<u64>() {
        Ok(seconds) => Some(seconds),
        Err(_) => match value.trim().parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => {
                notes.push(format!("retry-after {value:?} rounded up to whole seconds"));
                Some(seconds.ceil() as u64)
            }
            _ => {
                notes.push(format!("retry-after {value:?} is not a number of seconds: left out"));
                None
            }
        },
    });
    let mock_body = match dialect {
        Dialect::Responses | Dialect::ChatCompletions => dialect::responses::http_error_json(status),
        Dialect::AnthropicMessages => dialect::anthropic_messages::http_error_json(status),
        Dialect::Gemini => dialect::gemini::http_error_json(status),
    };
    if serde_json::from_slice::<Value>(answer.body).ok().as_ref() != Some(&mock_body) {
        notes.push(format!("HTTP {status} body (the mock sends its own): {}", preview(answer.body)));
    }
    Recorded { response: Response { status: Some(status), retry_after, ..Response::default() }, notes }
}

/// The error codes the mock words (`dialect::responses::error_message`), which each wire names its own way.
const CODES: [&str; 8] = [
    "server_error",
    "rate_limit_exceeded",
    "server_is_overloaded",
    "service_unavailable",
    "context_length_exceeded",
    "insufficient_quota",
    "invalid_prompt",
    "invalid_api_key",
];

/// The script's error code for a wire error whose name only `fits` codes tell apart: the one
/// whose message is `message`, a code the mock's message for an unknown code names, else the
/// first that fits.
pub fn code_of(message: Option<&str>, fits: impl Fn(&str) -> bool) -> Option<String> {
    let mut known = CODES.iter().copied().filter(|code| fits(code));
    if let Some(message) = message {
        if let Some(code) = known.clone().find(|code| dialect::responses::error_message(code) == message) {
            return Some(code.to_owned());
        }
        let named = message.strip_prefix("The provider reported an error (").and_then(|rest| rest.strip_suffix(")."));
        if let Some(code) = named.filter(|code| fits(code)) {
            return Some(code.to_owned());
        }
    }
    known.next().map(str::to_owned)
}

/// The first bytes of `body`, as text, for a note.
pub fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// A `u64` at `pointer` in `value`.
pub fn count(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}
