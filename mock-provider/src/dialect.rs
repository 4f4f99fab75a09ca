//! Wire dialects: which Provider API the mock speaks, and how a scripted
//! [`Response`] becomes bytes and timing on the wire in it.
//!
//! Adding a dialect is one module here (with `serves`, `model`, `answer` and `read`, see
//! [`responses`]) and one arm in each `match` of [`Dialect`].
//!
//! Every dialect streams the same [`Beat`]s of a response, in the same order: a pause's
//! `after` and `cut_after` count beats, so a pause or a cut falls at the same point of the content in
//! every dialect (a beat is one Responses API content frame; other dialects send zero or more
//! frames per beat). [`play`] applies the pause, the cut and the ending around a dialect's
//! [`Encoder`]; [`whole_answer`] applies the ending and the pause to a dialect's whole
//! (non-streaming) answer.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::beat::{Beat, arguments, beats};
use crate::body::Body;
use crate::conversation::{Conversation, ViewError};
use crate::script::{Ending, Pause, Response, Usage};

pub mod anthropic_messages;
pub mod chat_completions;
pub mod gemini;
pub mod responses;

/// A Provider wire format. Serialized as its key (`responses`, `chat_completions`, ...), the
/// word profiles and scenario files use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// The OpenAI Responses API: `POST /v1/responses`, SSE events.
    #[default]
    Responses,
    /// OpenAI Chat Completions: `POST /v1/chat/completions`, `chat.completion.chunk` frames.
    ChatCompletions,
    /// Anthropic Messages: `POST /v1/messages`.
    AnthropicMessages,
    /// Google Gemini: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and `:generateContent`.
    Gemini,
}

impl Dialect {
    /// Every dialect, in the order reports list them.
    pub const ALL: [Dialect; 4] =
        [Dialect::Responses, Dialect::ChatCompletions, Dialect::AnthropicMessages, Dialect::Gemini];

    /// The key profiles and scenario files write (`chat_completions`).
    pub fn key(self) -> &'static str {
        match self {
            Dialect::Responses => "responses",
            Dialect::ChatCompletions => "chat_completions",
            Dialect::AnthropicMessages => "anthropic_messages",
            Dialect::Gemini => "gemini",
        }
    }

    /// The top-level field of a request body that holds the conversation, item by item (what
    /// [`Dialect::read`] reads messages from; a later request appends to it).
    pub fn conversation_key(self) -> &'static str {
        match self {
            Dialect::Responses => "input",
            Dialect::ChatCompletions | Dialect::AnthropicMessages => "messages",
            Dialect::Gemini => "contents",
        }
    }

    /// The name people know it by (`Anthropic Messages`).
    pub fn human(self) -> &'static str {
        match self {
            Dialect::Responses => "OpenAI Responses",
            Dialect::ChatCompletions => "OpenAI Chat Completions",
            Dialect::AnthropicMessages => "Anthropic Messages",
            Dialect::Gemini => "Gemini",
        }
    }

    /// The endpoints it serves, for messages and docs.
    pub fn endpoints(self) -> &'static str {
        match self {
            Dialect::Responses => "POST /v1/responses",
            Dialect::ChatCompletions => "POST /v1/chat/completions",
            Dialect::AnthropicMessages => "POST /v1/messages",
            Dialect::Gemini => {
                "POST /v1beta/models/{model}:streamGenerateContent?alt=sse or POST /v1beta/models/{model}:generateContent"
            }
        }
    }

    /// True when `path` (without query and without a `/routes/<name>` prefix) is one of its
    /// endpoints.
    pub fn serves(self, path: &str) -> bool {
        match self {
            Dialect::Responses => responses::serves(path),
            Dialect::ChatCompletions => chat_completions::serves(path),
            Dialect::AnthropicMessages => anthropic_messages::serves(path),
            Dialect::Gemini => gemini::serves(path),
        }
    }

    /// The dialect whose endpoint `path` is, if any.
    pub fn of_path(path: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|dialect| dialect.serves(path))
    }

    /// The model a request names (in its body, or for Gemini in its path).
    pub fn model(self, asked: &Asked<'_>) -> Option<String> {
        match self {
            Dialect::Responses => responses::model(asked),
            Dialect::ChatCompletions => chat_completions::model(asked),
            Dialect::AnthropicMessages => anthropic_messages::model(asked),
            Dialect::Gemini => gemini::model(asked),
        }
    }

    /// The most output tokens a request body allows the model, in the dialect's field:
    /// `max_output_tokens` (Responses), `max_completion_tokens` or `max_tokens` (Chat
    /// Completions), `max_tokens` (Anthropic Messages), `generationConfig.maxOutputTokens`
    /// (Gemini).
    pub fn max_output(self, body: &Value) -> Option<u64> {
        let field = |pointer: &str| body.pointer(pointer).and_then(Value::as_u64);
        match self {
            Dialect::Responses => field("/max_output_tokens"),
            Dialect::ChatCompletions => field("/max_completion_tokens").or_else(|| field("/max_tokens")),
            Dialect::AnthropicMessages => field("/max_tokens"),
            Dialect::Gemini => field("/generationConfig/maxOutputTokens"),
        }
    }

    /// The usage reported with `response` as an answer to `body`: the scripted one, else a
    /// cut by the output limit reports the output tokens the request allowed (usage that agrees
    /// with the ending it comes with, so an agent reading usage takes the cut for the model's
    /// limit reached, not a Provider's clamp: issue 45), else [`Usage::DEFAULT`].
    pub fn reported_usage(self, response: &Response, body: Option<&Value>) -> Usage {
        let cut = matches!(&response.then, Ending::Incomplete(reason) if reason == "max_output_tokens");
        match (response.usage, body.and_then(|body| self.max_output(body))) {
            (None, Some(limit)) if cut => Usage { output: limit, ..Usage::DEFAULT },
            _ => response.effective_usage(),
        }
    }

    /// The whole answer to a request that `response` scripts.
    pub fn answer(self, response: &Response, ctx: &EncodeContext, asked: &Asked<'_>) -> Answer {
        match self {
            Dialect::Responses => responses::answer(response, ctx, asked),
            Dialect::ChatCompletions => chat_completions::answer(response, ctx, asked),
            Dialect::AnthropicMessages => anthropic_messages::answer(response, ctx, asked),
            Dialect::Gemini => gemini::answer(response, ctx, asked),
        }
    }

    /// The names of the tools a request body offers the model, in the dialect's shape:
    /// `tools[].name` (Responses, Anthropic Messages; a Responses `namespace` tool offers the
    /// tools it holds, each called by its own name), `tools[].function.name` (Chat
    /// Completions), `tools[].functionDeclarations[].name` (Gemini).
    pub fn tool_names(self, body: &Value) -> Vec<String> {
        let tools = body.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let name = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        match self {
            Dialect::Responses => tools
                .iter()
                .flat_map(|tool| match tool.get("type").and_then(Value::as_str) {
                    Some("namespace") => tool.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]),
                    _ => std::slice::from_ref(tool),
                })
                .filter_map(|tool| name(tool.get("name")))
                .collect(),
            Dialect::AnthropicMessages => tools.iter().filter_map(|tool| name(tool.get("name"))).collect(),
            Dialect::ChatCompletions => tools.iter().filter_map(|tool| name(tool.pointer("/function/name"))).collect(),
            Dialect::Gemini => tools
                .iter()
                .filter_map(|tool| tool.get("functionDeclarations").and_then(Value::as_array))
                .flatten()
                .filter_map(|declaration| name(declaration.get("name")))
                .collect(),
        }
    }

    /// A request body read into the dialect-neutral [`Conversation`].
    pub fn read(self, body: &Value) -> Result<Conversation, ViewError> {
        match self {
            Dialect::Responses => responses::read(body),
            Dialect::ChatCompletions => chat_completions::read(body),
            Dialect::AnthropicMessages => anthropic_messages::read(body),
            Dialect::Gemini => gemini::read(body),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A dialect key that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect `{0}`: expected one of responses, chat_completions, anthropic_messages, gemini")]
pub struct UnknownDialect(pub String);

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Dialect::ALL.into_iter().find(|dialect| dialect.key() == text).ok_or_else(|| UnknownDialect(text.to_owned()))
    }
}

/// What a request asked: its path (without query and route prefix) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The endpoint path, e.g. `/v1/chat/completions`.
    pub path: &'a str,
    /// The body, of which an answer reads a few top-level fields ([`Body::field`]).
    pub body: &'a Body,
}

/// One step of a reply body, shared by the HTTP server and the in-process channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Bytes to send as they are.
    Bytes(Bytes),
    /// Hold the stream open for this long, sending nothing.
    Pause(Duration),
    /// Drop the connection mid-body.
    Abort,
}

/// A whole answer: status, headers and body steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Headers as (name, value), content type first.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub steps: Vec<Step>,
}

/// Identity of one encoded response, chosen by the provider so ids are unique and deterministic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeContext {
    /// Response id, `resp_<n>`.
    pub response_id: String,
    /// Model name, copied from the request (or `unknown`).
    pub model: String,
    /// First item number: items are `rs_<n>`, `msg_<n>`, `fc_<n>` (call ids `call_<n>`) from here on.
    pub item_base: usize,
}

impl EncodeContext {
    /// The call id of the `index`th call of `response`: the scripted one or `call_<n>`, where
    /// `n` numbers output items (reasoning, message, calls) from [`Self::item_base`].
    pub fn call_id(&self, response: &Response, index: usize) -> String {
        let n = self.item_base + response.reasoning.len() + usize::from(!response.text.is_empty()) + index;
        response.calls[index].call_id.clone().unwrap_or_else(|| format!("call_{n}"))
    }
}

/// How one dialect writes a stream: frames for each beat, then for the ending.
pub trait Encoder {
    /// The frames of one beat (none when the dialect has nothing to say for it).
    fn beat(&mut self, beat: &Beat<'_>) -> Vec<Bytes>;
    /// The frames that end the stream: the terminal of a clean or failed ending; none for a
    /// disconnect or an EOF. `cut` is true when the content stopped early at `cut_after`.
    fn end(&mut self, ending: &Ending, cut: bool) -> Vec<Bytes>;
    /// The one frame whose data is not JSON, for [`Ending::Malformed`].
    fn malformed(&self) -> Bytes;
}

/// The body steps of a streamed response: each beat's frames (up to `cut_after`), the ending's
/// frames, a malformed frame or an abort, and each pause after its `after` beats (an ending
/// with frames counts as one beat, the malformed frame as another); a pause after more beats
/// than the stream has holds back the end of the body, and its drop.
///
/// Each beat is one step, whatever the number of frames the dialect sends for it (none is an
/// empty chunk, which HTTP does not send): a client reads the same number of chunks in every
/// dialect, so concurrent Sessions on a paused clock interleave the same way and their Logs
/// are the same files.
pub fn play(response: &Response, encoder: &mut dyn Encoder) -> Vec<Step> {
    let arguments = arguments(response);
    let beats = beats(response, &arguments);
    let shown = response.cut_after.map_or(beats.len(), |cut| cut.min(beats.len()));
    let mut units: Vec<Vec<Bytes>> = beats[..shown].iter().map(|beat| encoder.beat(beat)).collect();
    // An ending without frames (a disconnect, an EOF) is no beat.
    let end = encoder.end(&response.then, shown < beats.len());
    if !end.is_empty() {
        units.push(end);
    }
    if response.then == Ending::Malformed {
        units.push(vec![encoder.malformed()]);
    }
    let mut steps = Vec::new();
    let mut pauses = response.pause.iter().peekable();
    for (index, unit) in units.into_iter().enumerate() {
        while let Some(pause) = pauses.next_if(|pause| pause.after <= index) {
            steps.push(pause_step(pause));
        }
        steps.push(Step::Bytes(unit.concat().into()));
    }
    // A pause after the last unit holds the end of the body (an EOF, a drop) back.
    steps.extend(pauses.map(pause_step));
    if response.then == Ending::Disconnect {
        steps.push(Step::Abort);
    }
    steps
}

fn pause_step(pause: &Pause) -> Step {
    Step::Pause(Duration::from_millis(pause.ms))
}

/// The non-streaming answer of every dialect, [`play`]'s counterpart: a dialect gives only
/// `body`, its whole answer, and `error`, the HTTP status and body an error code stands for,
/// so the endings read the same in every dialect.
///
/// A clean ending is `body`; `error` and `failed` are the HTTP error (a whole answer has no
/// in-band error); `eof` is half of `body`, and `disconnect` the same half before the
/// connection drops (mid-body, as in a stream); `malformed` a body that is not JSON. A whole
/// answer has no beats to count, so its pauses, whatever the ending, hold it before its body.
pub fn whole_answer(response: &Response, body: Value, error: impl FnOnce(&str) -> (u16, Value)) -> Answer {
    let (status, bytes) = match &response.then {
        Ending::Completed | Ending::Incomplete(_) => (200, Bytes::from(body.to_string())),
        Ending::Error(code) | Ending::Failed(code) => {
            let (status, body) = error(code);
            (status, Bytes::from(body.to_string()))
        }
        Ending::Eof | Ending::Disconnect => {
            let whole = Bytes::from(body.to_string());
            (200, whole.slice(..whole.len() / 2))
        }
        Ending::Malformed => (200, Bytes::from_static(b"{not json")),
    };
    let mut steps: Vec<Step> = response.pause.iter().map(pause_step).collect();
    steps.push(Step::Bytes(bytes));
    if response.then == Ending::Disconnect {
        steps.push(Step::Abort);
    }
    Answer { status, headers: json_headers(), steps }
}

/// A JSON answer with this status.
pub fn json_answer(status: u16, body: Value) -> Answer {
    Answer { status, headers: json_headers(), steps: vec![Step::Bytes(Bytes::from(body.to_string()))] }
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".to_owned(), "application/json".to_owned())]
}

/// A streamed answer: status 200, `text/event-stream`.
pub fn sse_answer(steps: Vec<Step>) -> Answer {
    Answer {
        status: 200,
        headers: vec![
            ("content-type".to_owned(), "text/event-stream".to_owned()),
            ("cache-control".to_owned(), "no-cache".to_owned()),
        ],
        steps,
    }
}

/// An HTTP error answer: `body`, with `retry-after` when the script gives one.
pub fn error_answer(status: u16, retry_after: Option<u64>, body: Value) -> Answer {
    let mut answer = json_answer(status, body);
    answer.headers.extend(retry_after.map(|seconds| ("retry-after".to_owned(), seconds.to_string())));
    answer
}

/// The error message a failing `response` gives the client, worded the same in every
/// dialect: its HTTP error's, or its in-band `error` or `failed` event's; `None` for a
/// response that fails without one (a drop, an EOF, a malformed frame) or does not fail.
/// What a client must never pass off as the model's answer (REPLAY-NO-DIAGNOSTIC).
pub fn failure_message(response: &Response) -> Option<String> {
    if let Some(status) = response.status {
        return responses::http_error_json(status).pointer("/error/message")?.as_str().map(str::to_owned);
    }
    match &response.then {
        Ending::Error(code) | Ending::Failed(code) => Some(responses::error_message(code)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::in_process::{Chunk, play};
    use crate::script::Call;

    /// Each wire names its offered tools in its own shape; all four read the same names.
    #[test]
    fn each_dialect_reads_the_tools_a_body_offers() {
        let bodies = [
            (Dialect::Responses, json!({"tools": [{"type": "function", "name": "read"}, {"type": "web_search"}]})),
            (Dialect::ChatCompletions, json!({"tools": [{"type": "function", "function": {"name": "read"}}]})),
            (Dialect::AnthropicMessages, json!({"tools": [{"name": "read", "input_schema": {}}]})),
            (Dialect::Gemini, json!({"tools": [{"functionDeclarations": [{"name": "read"}]}]})),
        ];
        for (dialect, body) in bodies {
            assert_eq!(dialect.tool_names(&body), ["read"], "{dialect}");
            assert!(dialect.tool_names(&json!({})).is_empty());
        }
        // A Responses `namespace` tool (codex's MCP servers) offers the tools it holds.
        let namespaced = json!({"tools": [{"type": "namespace", "name": "mcp__gauntlet", "tools": [{"type": "function", "name": "read"}]}]});
        assert_eq!(Dialect::Responses.tool_names(&namespaced), ["read"]);
    }

    #[test]
    fn keys_paths_and_names() {
        for dialect in Dialect::ALL {
            assert_eq!(dialect.key().parse::<Dialect>().unwrap(), dialect);
            let json = serde_json::to_value(dialect).unwrap();
            assert_eq!(json, dialect.key());
        }
        assert_eq!(Dialect::of_path("/v1/responses"), Some(Dialect::Responses));
        assert_eq!(Dialect::of_path("/v1/chat/completions"), Some(Dialect::ChatCompletions));
        assert_eq!(Dialect::of_path("/v1/messages"), Some(Dialect::AnthropicMessages));
        assert_eq!(Dialect::of_path("/v1beta/models/gemini-2.5:streamGenerateContent"), Some(Dialect::Gemini));
        assert_eq!(Dialect::of_path("/v1beta/models/gemini-2.5:generateContent"), Some(Dialect::Gemini));
        assert_eq!(Dialect::of_path("/v2/chat"), None);
        let err = "anthropic".parse::<Dialect>().unwrap_err();
        assert!(err.to_string().contains("anthropic_messages"), "{err}");
        let gemini = Asked { path: "/v1beta/models/gemini-x:generateContent", body: &Body::from(Value::Null) };
        assert_eq!(Dialect::Gemini.model(&gemini).as_deref(), Some("gemini-x"));
    }

    /// The request that asks each dialect for a whole answer; none for Responses, which the mock
    /// always streams (docs/scenario-format.md).
    fn unstreamed(dialect: Dialect) -> Option<(&'static str, Body)> {
        let (path, body) = match dialect {
            Dialect::Responses => return None,
            Dialect::ChatCompletions => ("/v1/chat/completions", json!({ "model": "m", "stream": false })),
            Dialect::AnthropicMessages => ("/v1/messages", json!({ "model": "m", "stream": false })),
            Dialect::Gemini => ("/v1beta/models/m:generateContent", json!({})),
        };
        Some((path, Body::from(body)))
    }

    /// What a client makes of a whole answer's body.
    #[derive(Debug, Clone, PartialEq)]
    enum Shown {
        /// A JSON document.
        Json,
        /// The first part of the answer a clean ending gives, and no more.
        Cut,
        /// Bytes that are neither.
        NotJson,
    }

    /// What a client of a whole answer sees: status, content type, body, whether the
    /// connection dropped, and how long it waited for the first byte.
    #[derive(Debug, PartialEq)]
    struct Seen {
        status: u16,
        content_type: String,
        body: Shown,
        aborted: bool,
        waited: Duration,
    }

    /// Plays `answer` as a client receives it, on the paused clock; `clean` is the body of the
    /// same answer with a clean ending.
    async fn seen(answer: Answer, clean: &[u8]) -> Seen {
        let start = tokio::time::Instant::now();
        let (mut bytes, mut aborted, mut waited) = (Vec::new(), false, None);
        let mut chunks = play(answer.steps);
        while let Some(chunk) = chunks.recv().await {
            waited.get_or_insert_with(|| start.elapsed());
            match chunk {
                Chunk::Data(data) => bytes.extend_from_slice(&data),
                Chunk::Abort => aborted = true,
            }
        }
        let body = if serde_json::from_slice::<Value>(&bytes).is_ok() {
            Shown::Json
        } else if !bytes.is_empty() && bytes.len() < clean.len() && clean.starts_with(&bytes) {
            Shown::Cut
        } else {
            Shown::NotJson
        };
        let content_type = answer.headers[0].1.clone();
        Seen { status: answer.status, content_type, body, aborted, waited: waited.unwrap_or_default() }
    }

    fn body_bytes(answer: &Answer) -> Vec<u8> {
        let bytes = |step: &Step| if let Step::Bytes(bytes) = step { bytes.to_vec() } else { Vec::new() };
        answer.steps.iter().flat_map(bytes).collect()
    }

    /// Every ending, with no pause, one or two (all waited before the body), reads the same to
    /// a client of every dialect's whole answer, so the dialects cannot drift apart again.
    #[tokio::test(start_paused = true)]
    async fn every_dialect_ends_a_whole_answer_alike() {
        let ctx = EncodeContext { response_id: "resp_1".into(), model: "m".into(), item_base: 1 };
        // `server_error` is HTTP 500 in every dialect; other codes map to each wire's own status.
        let endings = [
            (Ending::Completed, 200, Shown::Json, false),
            (Ending::Incomplete("max_output_tokens".into()), 200, Shown::Json, false),
            (Ending::Error("server_error".into()), 500, Shown::Json, false),
            (Ending::Failed("server_error".into()), 500, Shown::Json, false),
            (Ending::Disconnect, 200, Shown::Cut, true),
            (Ending::Eof, 200, Shown::Cut, false),
            (Ending::Malformed, 200, Shown::NotJson, false),
        ];
        for (then, status, body, aborted) in endings {
            let one = Pause { after: 3, ms: 1_000 };
            for pause in [vec![], vec![one], vec![Pause { after: 0, ms: 250 }, one]] {
                let response = Response {
                    text: vec!["Hé".into(), "llo".into()],
                    calls: vec![Call {
                        name: "read".into(),
                        args: json!({ "path": "a" }),
                        call_id: None,
                        raw_args: None,
                        ..Call::default()
                    }],
                    then: then.clone(),
                    pause: pause.clone(),
                    ..Response::default()
                };
                let clean_response = Response { then: Ending::Completed, pause: Vec::new(), ..response.clone() };
                let waited = Duration::from_millis(pause.iter().map(|pause| pause.ms).sum());
                let content_type = "application/json".to_owned();
                let expected = Seen { status, content_type, body: body.clone(), aborted, waited };
                for dialect in Dialect::ALL {
                    let Some((path, request)) = unstreamed(dialect) else {
                        let asked = Asked { path: "/v1/responses", body: &Body::from(json!({ "stream": false })) };
                        assert_eq!(dialect.answer(&response, &ctx, &asked).headers[0].1, "text/event-stream");
                        continue;
                    };
                    let asked = Asked { path, body: &request };
                    let clean = body_bytes(&dialect.answer(&clean_response, &ctx, &asked));
                    let seen = seen(dialect.answer(&response, &ctx, &asked), &clean).await;
                    assert_eq!(seen, expected, "{dialect}, then = {then:?}, pause = {pause:?}");
                }
            }
        }
    }

    /// Half a body is cut at a byte, not at a character: a text whose middle byte falls inside
    /// a character cuts without a panic, in every dialect.
    #[test]
    fn half_a_body_may_split_a_character() {
        let ctx = EncodeContext { response_id: "resp_1".into(), model: "m".into(), item_base: 1 };
        for dialect in Dialect::ALL {
            let Some((path, request)) = unstreamed(dialect) else { continue };
            let asked = Asked { path, body: &request };
            let split = (400..402).any(|n| {
                let response = Response { text: vec!["é".repeat(n)], then: Ending::Eof, ..Response::default() };
                std::str::from_utf8(&body_bytes(&dialect.answer(&response, &ctx, &asked))).is_err()
            });
            assert!(split, "{dialect}: no cut fell inside a character");
        }
    }
}
