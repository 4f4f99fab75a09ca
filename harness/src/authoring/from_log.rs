//! A scenario that reproduces a Log: `gauntlet new FAMILY/NAME --from-log LOG`.
//!
//! Each `user_message` becomes a `[[turn]]` prompt. Between two of them, the Log's Provider
//! calls become scripted responses: a call that finished is its `provider_usage` and the
//! `reasoning`, `assistant_message` and `tool_call` events after it (earlier failed attempts,
//! from `attempts`, become HTTP 500s the runtime retries); the call a turn failed in becomes
//! its partial text and the fault `turn_failed` names:
//!
//! | `error_kind` | response |
//! | --- | --- |
//! | `provider_http_error` | `status` (an HTTP error), or `then = { error }` / `{ failed }` by `details.event_type` |
//! | `rate_limited` | `status = 429` with `retry_after`, once per attempt |
//! | `network` | `then = "disconnect"` |
//! | `incomplete_stream` | `then = "eof"` |
//! | `invalid_response` | `then = "malformed"` |
//! | `stream_idle_timeout` | a pause twice the idle timeout, which `[config]` takes from `details.timeout_ms` |
//! | `turn_timeout` | a pause as long as the turn budget, from `details.timeout_ms` |
//! | `cancelled` | a long pause, and `cancel` at the first text chunk (or when sent); `cancel` at the tool call when a tool was interrupted; in a child script the pause alone (its parent cancels it); no response and `cancel` when sent when the Log holds nothing the Provider sent for the turn |
//!
//! Text is cut into as many chunks as the failure's frame count says were streamed, so the
//! failure's details match too; a finished call that took time before its `provider_usage`
//! keeps it as a pause, so concurrent Sessions interleave as they did. A `read` that succeeded
//! puts its output in `[workspace]` (unless the Log wrote that file first). `expect` and
//! `error_kind` come from the audited terminal states ([`gauntlet_judge::audit`]), and each
//! `run_workflow` call's `[[expect.workflow]]` from its spine ([`workflows`]).
//!
//! What an earlier process wrote becomes the `[log]` preload ([`resume`]: restart recovery, or
//! output no Provider call produced, marks where the last process began), and each child Session
//! with a Log beside the root Log a `[children.<route>]` script ([`children`]). What no Log can
//! say (a busy prompt, a reload, the script of a child whose Log is missing) is left out and, where
//! the Log shows it was there, named in a note. The round trip holds for every agent scenario of
//! the corpus (`new_from_log_round_trips_every_agent_scenario` in `harness/tests/cli.rs`).
//!
//! Responses are built as TOML values as they are drafted, and the scenario as a `toml_edit`
//! document, comments and all ([`document`]): no TOML is written by hand.

mod children;
mod document;
mod resume;
mod workflows;

use std::collections::BTreeMap;

use gauntlet_agent::EventType;
use gauntlet_agent::TerminalStatus;
use gauntlet_agent::event::ErrorKind;
use gauntlet_agent::resource::links;
use gauntlet_mock_provider::Ending as Then;
use serde_json::Value;
use toml_edit::{Array, InlineTable, Table};

use children::ChildDraft;
use document::{inline, int, json_value};
use gauntlet_judge::audit::{self, TurnAudit};
use gauntlet_judge::log_file::LogFile;
use gauntlet_judge::log_line::{Line, TurnFailed};
use gauntlet_judge::scenario::{Config, Trigger};

/// A scenario written from a Log, and what the Log could not say.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The scenario's TOML.
    pub text: String,
    /// What the author must know or add by hand: each note is also a comment in `text`.
    pub notes: Vec<String>,
}

/// One readable line of a Log.
#[derive(Debug)]
struct Event {
    /// Its index in the Log's lines.
    index: usize,
    line: Line,
    /// `ts`, as ms since the epoch.
    at_ms: Option<i64>,
}

/// The index of each turn's `user_message` in `events`.
fn turn_starts(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, event)| event.line.kind == EventType::UserMessage)
        .map(|(idx, _)| idx)
        .collect()
}

/// The readable lines of `lines`.
fn events(lines: &[String]) -> Vec<Event> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(index, raw)| {
            let line = Line::parse(raw).ok()?;
            let at_ms = serde_json::from_str::<Value>(raw)
                .ok()
                .and_then(|value| value.get("ts").and_then(Value::as_str).and_then(millis));
            Some(Event { index, line, at_ms })
        })
        .collect()
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` as ms since the epoch (the Log's `ts`, LOG-ENVELOPE).
fn millis(ts: &str) -> Option<i64> {
    let field = |range: std::ops::Range<usize>| ts.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (field(0..4)?, field(5..7)?, field(8..10)?);
    let (hour, minute, second) = (field(11..13)?, field(14..16)?, field(17..19)?);
    let fraction = ts.get(19..).and_then(|rest| rest.strip_prefix('.')).unwrap_or("");
    let digits: String = fraction.chars().take_while(char::is_ascii_digit).take(3).collect();
    let ms = format!("{digits:0<3}").parse::<i64>().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms)
}

/// A Provider call as the Log shows it.
#[derive(Debug, Default)]
struct Call {
    /// The call's `provider_usage`, when it finished.
    usage: Option<Value>,
    /// How long before its `provider_usage` the previous event was recorded: the time the
    /// Provider took, kept as a pause so concurrent Sessions interleave as they did.
    took_ms: u64,
    /// Reasoning items: `(summary chunks, encrypted content)`.
    reasoning: Vec<(Vec<String>, Option<String>)>,
    /// Its assistant text.
    text: Option<String>,
    /// `metadata.output_truncation.reason` of a truncated answer.
    truncation: Option<String>,
    /// Its tool calls: `(name, args, call_id)`.
    calls: Vec<(String, Value, Option<String>)>,
    /// No more output belongs to it (a tool result or a failure came).
    closed: bool,
}

/// One `[[turn]]` (or a child's one Turn) being written.
#[derive(Debug, Default)]
struct TurnDraft {
    prompt: String,
    /// The resources the prompt pointed at, `(uri, name)`.
    links: Vec<(String, String)>,
    /// The key its client submitted it by (ACP v2).
    idempotency_key: Option<String>,
    model: Option<String>,
    responses: Vec<InlineTable>,
    expect: Option<TerminalStatus>,
    error_kind: Option<String>,
    stop_reason: Option<&'static str>,
    cancel: Option<Trigger>,
}

/// A scenario reproducing `file` (a Log and the child Logs beside it), titled after `source`.
///
/// Events before the point where the Log's last process began ([`resume::point`]) become the
/// `[log]` preload; each later `user_message` a `[[turn]]`; each child Session with a Log a
/// `[children.<route>]` script ([`children::scripts`]).
pub fn scenario(file: &LogFile, source: &str) -> Written {
    let all = events(&file.lines);
    let mut notes = Vec::new();
    if let Some(torn) = &file.torn_tail {
        notes.push(format!(
            "the Log ends in a torn line at byte {} (a crash mid-write) that no process resumed: the scenario scripts what the complete lines show; to reproduce the resume itself, preload the Log as [log] with its tail and set [expect] torn_tail_offset",
            torn.offset
        ));
    }
    let resume = resume::point(&all, &mut notes);
    let preload: Option<String> =
        (resume > 0).then(|| file.lines[..all[resume].index].iter().map(|line| format!("{line}\n")).collect());
    let events = &all[resume..];
    let audited = audit::audit(&file.lines);
    let mut config = Config::default();
    if let Some(model) = events
        .iter()
        .find(|event| event.line.kind == EventType::ProviderUsage)
        .and_then(|event| event.line.provider_usage()?.model)
    {
        model.clone_into(&mut config.model);
    }
    let mut model = config.model.clone();
    let starts = turn_starts(events);
    let mut turns: Vec<TurnDraft> = Vec::new();
    for (turn_idx, &start) in starts.iter().enumerate() {
        let end = starts.get(turn_idx + 1).copied().unwrap_or(events.len());
        let user = &events[start];
        let audit = audited.turns.iter().find(|turn| Some(turn.user_seq) == user.line.seq);
        let resources = user.line.user_message().map_or(&[][..], |prompt| prompt.resources);
        if let Some(note) = image_note(turn_idx, resources) {
            notes.push(note);
        }
        turns.push(draft_turn(user, &events[start + 1..end], audit, &mut config, &mut model));
    }
    let children = children::scripts(file, &all, resume, &audited, &mut config, &mut notes);
    let mut workspace = workspace_files(&all);
    for child in file.children.values() {
        for (path, content) in workspace_files(&events_of(child)) {
            workspace.entry(path).or_insert(content);
        }
    }
    let workflows = workflows::expectations(events, &audited);
    let draft = Draft { config, workspace, preload, workflows, turns, children, notes };
    Written { text: document::render(source, &draft), notes: draft.notes }
}

/// Every part of the scenario being written.
#[derive(Debug)]
struct Draft {
    config: Config,
    workspace: BTreeMap<String, String>,
    /// The `[log]` preload's NDJSON.
    preload: Option<String>,
    /// The `[[expect.workflow]]` tables.
    workflows: Vec<Table>,
    turns: Vec<TurnDraft>,
    children: Vec<ChildDraft>,
    notes: Vec<String>,
}

/// [`events`] of a child Log.
fn events_of(file: &LogFile) -> Vec<Event> {
    events(&file.lines)
}

/// The files a `read` that succeeded shows, unless the Log wrote that file first.
fn workspace_files(events: &[Event]) -> BTreeMap<String, String> {
    let mut workspace = BTreeMap::new();
    let mut written: Vec<&str> = Vec::new();
    let mut pending_reads: BTreeMap<&str, &str> = BTreeMap::new();
    for event in events {
        let line = &event.line;
        match line.kind.known() {
            Some(EventType::ToolCall) => {
                let Some(call) = line.tool_call() else { continue };
                let path = call.args.and_then(|args| args.get("path")?.as_str());
                match (call.name, path) {
                    (Some("write"), Some(path)) => written.push(path),
                    (Some("read"), Some(path)) if !written.contains(&path) => {
                        pending_reads.insert(call.call_id.unwrap_or_default(), path);
                    }
                    _ => {}
                }
            }
            Some(EventType::ToolResult) => {
                let Some(result) = line.tool_result() else { continue };
                if let Some(path) = pending_reads.remove(result.call_id.unwrap_or_default())
                    && result.ok == Some(true)
                    && let Some(output) = result.output
                {
                    workspace.entry(path.to_owned()).or_insert_with(|| output.to_owned());
                }
            }
            _ => {}
        }
    }
    workspace
}

/// What to add by hand for a prompt that carried images: the Log keeps each one's descriptor,
/// never its bytes (LOG-NO-RESOURCE-BYTES), so no scenario written from it can send them.
fn image_note(turn_idx: usize, resources: &[Value]) -> Option<String> {
    if resources.is_empty() {
        return None;
    }
    let described: Vec<String> = resources
        .iter()
        .map(|resource| {
            let text = |key: &str| resource.get(key).and_then(Value::as_str).unwrap_or("?").to_owned();
            let bytes = resource.get("byte_length").and_then(Value::as_u64).unwrap_or_default();
            format!("{}, {bytes} bytes, sha256 {}", text("mime_type"), text("sha256"))
        })
        .collect();
    Some(format!(
        "turn {}'s prompt carried {} image(s) ({}): the Log keeps their descriptors, never their bytes, so add them to the turn by hand as `images = [{{ mime_type, data }}]`",
        turn_idx + 1,
        resources.len(),
        described.join("; ")
    ))
}

/// One Turn's draft: `user` its `user_message`, `events` what follows it up to the next.
fn draft_turn(
    user: &Event,
    events: &[Event],
    audited: Option<&TurnAudit>,
    config: &mut Config,
    model: &mut String,
) -> TurnDraft {
    let mut read = TurnEvents::read(events, user.at_ms);
    let prompt = user.line.user_message();
    let mut turn = TurnDraft {
        prompt: prompt.and_then(|prompt| prompt.text).unwrap_or_default().to_owned(),
        links: user.line.data.as_object().map(links).unwrap_or_default().into_iter().map(|l| (l.uri, l.name)).collect(),
        idempotency_key: prompt.and_then(|prompt| prompt.idempotency_key).map(str::to_owned),
        model: switched_model(&read.calls, model),
        ..TurnDraft::default()
    };
    if read.cancelled_in_tool() {
        turn.cancel = Some(Trigger::ToolCall);
    }
    let failure = read.take_failure();
    for call in &read.calls {
        turn.responses.extend(finished_responses(call, config));
    }
    if let Some((call, failed)) = failure {
        let responses = failed_responses(&call, &failed, config, &mut turn);
        turn.responses.extend(responses);
    }
    if let Some(audited) = audited {
        turn.expect = audited.terminal_status;
        turn.error_kind.clone_from(&audited.error_kind);
    }
    if turn.expect == Some(TerminalStatus::Completed) {
        turn.stop_reason = stop_reason(&read.calls);
    }
    turn
}

/// A Turn's events after its `user_message`, read into the Provider calls they show and how the
/// Turn failed.
#[derive(Debug, Default)]
struct TurnEvents<'a> {
    calls: Vec<Call>,
    /// The `turn_failed` that ended the Turn.
    failure: Option<TurnFailed<'a>>,
    /// A tool the cancel interrupted: the turn was cancelled while it ran.
    tool_interrupted: bool,
}

impl<'a> TurnEvents<'a> {
    /// Reads `events`, the Turn's `user_message` having been recorded at `prompted_ms`.
    fn read(events: &'a [Event], prompted_ms: Option<i64>) -> Self {
        let mut read = Self::default();
        let mut last_ms = prompted_ms;
        for event in events {
            read.add(event, last_ms);
            last_ms = event.at_ms.or(last_ms);
        }
        read
    }

    /// Adds one event, the event before it having been recorded at `last_ms`.
    fn add(&mut self, event: &'a Event, last_ms: Option<i64>) {
        let line = &event.line;
        match line.kind.known() {
            Some(EventType::ProviderUsage) => {
                let took_ms = match (last_ms, event.at_ms) {
                    (Some(before), Some(at)) => u64::try_from(at - before).unwrap_or(0),
                    _ => 0,
                };
                self.calls.push(Call { usage: Some(line.data.clone()), took_ms, ..Call::default() });
            }
            Some(EventType::Reasoning) => {
                open_call(&mut self.calls, Part::Reasoning).reasoning.push(reasoning_item(line))
            }
            Some(EventType::AssistantMessage) => {
                let call = open_call(&mut self.calls, Part::Text);
                let message = line.assistant_message();
                call.text = message.and_then(|message| message.text).map(str::to_owned);
                call.truncation = message.and_then(|message| message.truncation).map(str::to_owned);
            }
            Some(EventType::ToolCall) => {
                // The calls of one response run one after another: a tool call after a tool
                // result with no Provider call between belongs to the same response.
                let call = match self.calls.last_mut() {
                    Some(last) if last.closed && !last.calls.is_empty() => last,
                    _ => open_call(&mut self.calls, Part::ToolCall),
                };
                call.calls.push(tool_call(line));
            }
            Some(EventType::ToolResult) => {
                if let Some(last) = self.calls.last_mut() {
                    last.closed = true;
                }
                let details = line.tool_result().and_then(|result| result.error_details());
                self.tool_interrupted |=
                    details.and_then(|details| details.get("reason")?.as_str()) == Some("interrupt");
            }
            Some(EventType::TurnFailed) => self.failure = line.turn_failed(),
            _ => {}
        }
    }

    /// Whether the Turn was cancelled while a tool ran.
    fn cancelled_in_tool(&self) -> bool {
        self.tool_interrupted && self.failure.and_then(|failed| failed.error_kind) == Some("cancelled")
    }

    /// The call the Turn failed in, taken out of `calls` (the last one when it has no usage and is
    /// still open, else a call with no output), with its `turn_failed`; none when the Turn did not
    /// fail, or was cancelled while a tool ran.
    fn take_failure(&mut self) -> Option<(Call, TurnFailed<'a>)> {
        let failed = self.failure.filter(|_| !self.cancelled_in_tool())?;
        let call = self.calls.pop_if(|last| last.usage.is_none() && !last.closed).unwrap_or_default();
        Some((call, failed))
    }
}

/// A `reasoning` event's item: its summary chunks and its encrypted content.
fn reasoning_item(line: &Line) -> (Vec<String>, Option<String>) {
    let item = line.reasoning().and_then(|reasoning| reasoning.item);
    let summary = item
        .and_then(|item| item.get("summary"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let encrypted = item.and_then(|item| item.get("encrypted_content")).and_then(Value::as_str).map(str::to_owned);
    (summary, encrypted)
}

/// A `tool_call` event as a response's call: `(name, args, call_id)`.
fn tool_call(line: &Line) -> (String, Value, Option<String>) {
    let call = line.tool_call();
    let name = call.and_then(|call| call.name).unwrap_or_default().to_owned();
    let args = call.and_then(|call| call.args).cloned().unwrap_or(Value::Object(Default::default()));
    // A call the runtime gave an id of its own is reproduced with the id the model gave.
    let call_id = call.and_then(|call| call.given_call_id.or(call.call_id));
    (name, args, call_id.map(str::to_owned))
}

/// The model the Turn's calls name, when it is not `model` (which becomes it): the Turn's
/// `model` key.
fn switched_model(calls: &[Call], model: &mut String) -> Option<String> {
    let named = calls.iter().find_map(|call| call.usage.as_ref()?.get("model")?.as_str())?;
    (named != model).then(|| {
        named.clone_into(model);
        named.to_owned()
    })
}

/// The `stop_reason` of a completed Turn whose last answer was truncated: `refusal` for a
/// content filter, else `max_tokens`.
fn stop_reason(calls: &[Call]) -> Option<&'static str> {
    let reason = calls.last()?.truncation.as_deref()?;
    Some(if reason == "content_filter" { "refusal" } else { "max_tokens" })
}

/// Where an output item sits in a response: reasoning, then text, then calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Reasoning,
    Text,
    ToolCall,
}

impl Call {
    /// The last part it holds.
    fn last_part(&self) -> Option<Part> {
        if !self.calls.is_empty() {
            Some(Part::ToolCall)
        } else if self.text.is_some() {
            Some(Part::Text)
        } else if !self.reasoning.is_empty() {
            Some(Part::Reasoning)
        } else {
            None
        }
    }
}

/// The call an output `part` goes to: the last one while it is open and the part can follow
/// what it holds, else a new one (a call that failed before its `provider_usage`).
fn open_call(calls: &mut Vec<Call>, part: Part) -> &mut Call {
    let fits = |call: &Call| match call.last_part() {
        None => true,
        Some(last) => last < part || (last == part && part != Part::Text),
    };
    if calls.last().is_none_or(|call| call.closed || !fits(call)) {
        calls.push(Call::default());
    }
    let last = calls.len() - 1;
    &mut calls[last]
}

/// The responses of a call that finished: its retried attempts, then its output.
fn finished_responses(call: &Call, config: &mut Config) -> Vec<InlineTable> {
    let usage = call.usage.as_ref();
    let attempts = usage.and_then(|usage| usage.get("attempts")).and_then(Value::as_u64).unwrap_or(1);
    let retries = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
    config.max_retries = config.max_retries.max(retries);
    let mut responses: Vec<InlineTable> = (1..attempts).map(|_| status(500)).collect();
    let mut response = output(call, 1);
    if let Some(usage) = usage.and_then(|usage| usage.get("usage")) {
        let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let scripted = [
            ("input", number("/input_tokens")),
            ("cached", number("/input_tokens_details/cached_tokens")),
            ("output", number("/output_tokens")),
            ("reasoning", number("/output_tokens_details/reasoning_tokens")),
        ];
        if scripted.map(|(_, tokens)| tokens) != [100, 0, 10, 0] {
            response.insert("usage", inline(scripted.map(|(key, tokens)| (key, int(tokens)))).into());
        }
    }
    if let Some(reason) = &call.truncation {
        response.insert("then", inline([("incomplete", reason.into())]).into());
    }
    // Before any output (after `created` and `in_progress`), and only where the wait cannot be
    // a retry's delay or trip the idle timeout.
    if call.took_ms > 0 && attempts == 1 && call.took_ms < config.stream_idle_timeout_ms {
        response.insert("pause", pause(2, call.took_ms));
    }
    responses.push(response);
    responses
}

/// The responses of the call a turn failed in, from its partial output and `turn_failed`;
/// adjusts `config` and the turn for timeouts and cancels.
fn failed_responses(call: &Call, failed: &TurnFailed, config: &mut Config, turn: &mut TurnDraft) -> Vec<InlineTable> {
    let detail = |key: &str| failed.detail(key);
    let number = |key: &str| detail(key).and_then(Value::as_u64);
    let attempts = number("attempts").unwrap_or(1);
    let retried = |response: InlineTable| vec![response; usize::try_from(attempts.saturating_sub(1)).unwrap_or(0)];
    // A kind the runtime does not name (another implementation's) is answered as an error frame.
    let Some(kind) = failed.error_kind.and_then(ErrorKind::parse) else {
        return vec![ending(call, &Then::Error("server_error".to_owned()), 1)];
    };
    match kind {
        ErrorKind::RateLimited | ErrorKind::ProviderHttpError if number("status").is_some() => {
            status_responses(number("status").unwrap_or(500), number("retry_after_s"), attempts, config)
        }
        ErrorKind::ProviderHttpError => {
            let code = detail("code").and_then(Value::as_str).unwrap_or("server_error").to_owned();
            let then = match detail("event_type").and_then(Value::as_str) {
                Some("response.failed") => Then::Failed(code),
                _ => Then::Error(code),
            };
            let mut responses = retried(status(500));
            // The error frame follows the text's done frames (text, part, item).
            responses.push(ending(call, &then, chunks_from(call, number("frame_index"), 1)));
            responses
        }
        ErrorKind::Network => {
            let mut responses = retried(then_only(&Then::Disconnect));
            responses.push(ending(call, &Then::Disconnect, 1));
            responses
        }
        ErrorKind::IncompleteStream => {
            let mut responses = retried(status(500));
            responses.push(ending(call, &Then::Eof, chunks_from(call, number("frames"), 0)));
            responses
        }
        ErrorKind::InvalidResponse => vec![ending(call, &Then::Malformed, 1)],
        ErrorKind::StreamIdleTimeout => {
            let timeout = number("timeout_ms").unwrap_or(config.stream_idle_timeout_ms);
            config.stream_idle_timeout_ms = timeout;
            let mut responses = retried(status(500));
            responses.push(long_pause(call, timeout.saturating_mul(2), 1));
            responses
        }
        ErrorKind::TurnTimeout => {
            let timeout = number("timeout_ms").unwrap_or(config.turn_timeout_ms);
            config.turn_timeout_ms = timeout;
            if config.stream_idle_timeout_ms <= timeout {
                config.stream_idle_timeout_ms = timeout.saturating_mul(2);
            }
            vec![long_pause(call, timeout, 1)]
        }
        // Nothing the Provider sent reached the Log (a cancel while the runtime waited to
        // retry, say): the client cancels as it sends the prompt, and no response is scripted.
        ErrorKind::Cancelled if call.text.is_none() && call.calls.is_empty() && call.reasoning.is_empty() => {
            turn.cancel = Some(Trigger::Sent);
            Vec::new()
        }
        ErrorKind::Cancelled => {
            turn.cancel = Some(if call.text.is_some() { Trigger::FirstDelta } else { Trigger::Sent });
            vec![long_pause(call, 3_600_000, 1)]
        }
        // A 429 without its status, or a restart (the `[log]` preload's to say, [`resume`]).
        ErrorKind::RateLimited | ErrorKind::Restarted => vec![ending(call, &Then::Error("server_error".to_owned()), 1)],
    }
}

/// The responses of a call whose every attempt answered HTTP `code` (a 429 waits
/// `retry_after_s`); the runtime gave up after `attempts`.
fn status_responses(code: u64, retry_after_s: Option<u64>, attempts: u64, config: &mut Config) -> Vec<InlineTable> {
    let mut response = status(code);
    if let Some(seconds) = retry_after_s {
        response.insert("retry_after", int(seconds));
    }
    // The runtime gave up after these attempts: exactly this many retries (of a status it
    // retries at all: 429 and 5xx).
    if code == 429 || code >= 500 {
        config.max_retries = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
    }
    vec![response; usize::try_from(attempts).unwrap_or(1)]
}

/// The text chunks to script before a fault the runtime saw after `frames_with_text` frames.
/// Where a frame lands in the mock's stream is the mock's to say (its beats): each text chunk
/// is one beat, so the chunks are the frames before the fault less the rest of a one-chunk
/// stream up to the message's end.
fn chunks_from(call: &Call, frames_with_text: Option<u64>, extra: u64) -> u64 {
    let rest = to_u64(mock_response(call, 1).beats_through_message()).saturating_sub(1);
    frames_with_text.map_or(1, |frames| frames.saturating_sub(rest + extra).max(1))
}

/// The call's output in `chunks` pieces, then `then`.
fn ending(call: &Call, then: &Then, chunks: u64) -> InlineTable {
    let mut response = output(call, chunks);
    if let Some(then) = then.toml() {
        response.insert("then", then);
    }
    response
}

/// A response of no output that ends in `then`.
fn then_only(then: &Then) -> InlineTable {
    then.toml().map(|then| inline([("then", then)])).unwrap_or_default()
}

/// The call's output in `chunks` pieces, pausing `ms` after its text.
fn long_pause(call: &Call, ms: u64, chunks: u64) -> InlineTable {
    let after = to_u64(mock_response(call, chunks).beats_through_text());
    let mut response = output(call, chunks);
    response.insert("pause", pause(after, ms));
    response
}

/// A response holding a call's output: its `reasoning`, `text` and `calls`, the text in
/// `chunks` pieces.
/// The response [`output`] writes, as the mock reads it: to ask the mock where a frame lands.
fn mock_response(call: &Call, chunks: u64) -> gauntlet_mock_provider::Response {
    use gauntlet_mock_provider::{Call as MockCall, Reasoning};
    gauntlet_mock_provider::Response {
        reasoning: call
            .reasoning
            .iter()
            .map(|(summary, encrypted)| Reasoning { summary: summary.clone(), encrypted: encrypted.clone() })
            .collect(),
        text: call.text.as_deref().map(|text| split(text, chunks)).unwrap_or_default(),
        calls: call
            .calls
            .iter()
            .map(|(name, args, call_id)| {
                let (args, raw_args) = match args {
                    Value::String(text) => (Value::Null, Some(text.clone())),
                    args => (args.clone(), None),
                };
                MockCall { name: name.clone(), args, call_id: call_id.clone(), raw_args, ..MockCall::default() }
            })
            .collect(),
        ..Default::default()
    }
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn output(call: &Call, chunks: u64) -> InlineTable {
    let mut response = InlineTable::new();
    if !call.reasoning.is_empty() {
        let items = call.reasoning.iter().map(|(summary, encrypted)| {
            let mut item = inline([("summary", summary.iter().collect())]);
            if let Some(encrypted) = encrypted {
                item.insert("encrypted", encrypted.into());
            }
            item
        });
        response.insert("reasoning", items.collect::<Array>().into());
    }
    if let Some(text) = &call.text {
        response.insert("text", split(text, chunks).into_iter().collect());
    }
    if !call.calls.is_empty() {
        let items = call.calls.iter().map(|(name, args, call_id)| {
            // A Log keeps arguments that are not a JSON object as the model's text (raw_args).
            let arguments = match args {
                Value::String(text) => ("raw_args", text.into()),
                args => ("args", json_value(args)),
            };
            let mut item = inline([("name", name.into()), arguments]);
            if let Some(call_id) = call_id {
                item.insert("call_id", call_id.into());
            }
            item
        });
        response.insert("calls", items.collect::<Array>().into());
    }
    response
}

/// `{ status = code }`: an HTTP error.
fn status(code: u64) -> InlineTable {
    inline([("status", int(code))])
}

/// `pause = { after, ms }`: a wait of `ms` after the stream's first `after` frames.
fn pause(after: u64, ms: u64) -> toml_edit::Value {
    inline([("after", int(after)), ("ms", int(ms))]).into()
}

/// `text` cut into `chunks` pieces of about equal length (fewer when it is shorter).
fn split(text: &str, chunks: u64) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let chunks = usize::try_from(chunks).unwrap_or(1).clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(chunks).max(1);
    let mut pieces: Vec<String> = chars.chunks(size).map(|piece| piece.iter().collect()).collect();
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_prompts_images_are_a_note_since_the_log_has_no_bytes() {
        let line = Line::parse(
            r#"{"type":"user_message","data":{"text":"look","resources":[{"kind":"image","mime_type":"image/png","byte_length":70,"sha256":"c414"}]}}"#,
        )
        .unwrap();
        let resources = line.user_message().unwrap().resources;
        let note = image_note(0, resources).unwrap();
        assert!(note.starts_with("turn 1's prompt carried 1 image(s) (image/png, 70 bytes, sha256 c414)"), "{note}");
        assert_eq!(image_note(0, &[]), None);
    }

    /// A Log file of `(type, data)` events, stamped `ts` second by second as given.
    fn log(events: &[(&str, &str, u32)]) -> LogFile {
        let lines = events
            .iter()
            .enumerate()
            .map(|(seq, (kind, data, second))| {
                format!(
                    r#"{{"data":{data},"id":"{seq:016x}","seq":{seq},"session_id":"root","ts":"2026-01-01T00:00:{second:02}.000000Z","type":"{kind}"}}"#
                )
            })
            .collect();
        LogFile { path: "log.ndjson".into(), lines, torn_tail: None, children: BTreeMap::new() }
    }

    const USAGE: &str = r#"{"attempts":1,"model":"gpt-5.5"}"#;

    #[test]
    fn ts_reads_as_millis_since_the_epoch() {
        assert_eq!(millis("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(millis("2026-01-01T00:00:05.250000Z"), Some(1_767_225_605_250));
        assert_eq!(millis("not a time"), None);
    }

    #[test]
    fn restart_recovery_marks_where_the_last_process_began() {
        let file = log(&[
            ("user_message", r#"{"text":"Read it"}"#, 0),
            ("provider_usage", USAGE, 0),
            ("tool_call", r#"{"args":{"path":"a"},"call_id":"c1","name":"read"}"#, 0),
            (
                "tool_result",
                r#"{"call_id":"c1","ok":false,"error":{"kind":"orphan_tool_call","details":{"reason":"restart"}}}"#,
                9,
            ),
            ("turn_failed", r#"{"error_kind":"restarted","terminal_status":"interrupted"}"#, 9),
            ("user_message", r#"{"text":"Again"}"#, 9),
            ("provider_usage", USAGE, 9),
            ("assistant_message", r#"{"text":"Done."}"#, 9),
        ]);
        let written = scenario(&file, "log.ndjson");
        let loaded = gauntlet_judge::scenario::parse(&written.text, Path::new("x.toml")).unwrap();
        assert_eq!(loaded.log.unwrap().ndjson.lines().count(), 3, "{}", written.text);
        assert_eq!(loaded.turns.len(), 1);
        assert!(written.notes.is_empty());
    }

    #[test]
    fn output_without_usage_is_preloaded_when_the_log_records_usage() {
        let earlier = ("assistant_message", r#"{"text":"First."}"#, 0);
        let file = log(&[
            ("user_message", r#"{"text":"One"}"#, 0),
            earlier,
            ("user_message", r#"{"text":"Two"}"#, 1),
            ("provider_usage", USAGE, 1),
            ("assistant_message", r#"{"text":"Second."}"#, 1),
        ]);
        let loaded = gauntlet_judge::scenario::parse(&scenario(&file, "l").text, Path::new("x.toml")).unwrap();
        assert_eq!((loaded.log.map(|log| log.ndjson.lines().count()), loaded.turns.len()), (Some(2), 1));
        // Text right before `turn_failed` is a failed call's partial text, even recorded clean.
        let file = log(&[
            ("user_message", r#"{"text":"One"}"#, 0),
            earlier,
            ("turn_failed", r#"{"error_kind":"network","terminal_status":"partial_failed"}"#, 0),
            ("user_message", r#"{"text":"Two"}"#, 1),
            ("provider_usage", USAGE, 1),
            ("assistant_message", r#"{"text":"Second."}"#, 1),
        ]);
        let loaded = gauntlet_judge::scenario::parse(&scenario(&file, "l").text, Path::new("x.toml")).unwrap();
        assert_eq!((loaded.log.is_none(), loaded.turns.len()), (true, 2));
        // A Log that records no usage at all is scripted whole.
        let file = log(&[("user_message", r#"{"text":"One"}"#, 0), earlier]);
        let loaded = gauntlet_judge::scenario::parse(&scenario(&file, "l").text, Path::new("x.toml")).unwrap();
        assert_eq!((loaded.log.is_none(), loaded.turns.len()), (true, 1));
    }

    #[test]
    fn a_child_that_ran_without_its_log_gets_a_note_and_no_script() {
        let file = log(&[
            ("user_message", r#"{"text":"Use a helper"}"#, 0),
            ("provider_usage", USAGE, 0),
            ("tool_call", r#"{"args":{"task":"t"},"call_id":"c1","name":"spawn_agent"}"#, 0),
            (
                "subagent_event",
                r#"{"child_session_id":"sub_1","subagent_id":"sub_1","event":"started","status":"running"}"#,
                0,
            ),
            ("tool_result", r#"{"call_id":"c1","ok":true,"subagent":{"status":"running"}}"#, 0),
            ("provider_usage", USAGE, 0),
            ("assistant_message", r#"{"text":"On it."}"#, 0),
            (
                "subagent_event",
                r#"{"child_session_id":"sub_1","subagent_id":"sub_1","event":"finished","status":"completed"}"#,
                4,
            ),
        ]);
        let written = scenario(&file, "l");
        assert_eq!(written.notes.len(), 1);
        assert!(written.notes[0].starts_with("child Session `sub_1` ran, but its Log"), "{:?}", written.notes);
        let loaded = gauntlet_judge::scenario::parse(&written.text, Path::new("x.toml")).unwrap();
        assert!(loaded.children["sub_1"].respond.is_empty());

        // With its Log, it is scripted, the Provider's four seconds kept as a pause.
        let mut file = file;
        let child = log(&[
            ("user_message", r#"{"text":"t"}"#, 0),
            ("provider_usage", USAGE, 4),
            ("assistant_message", r#"{"text":"Found it."}"#, 4),
        ]);
        file.children.insert("sub_1".to_owned(), child);
        let written = scenario(&file, "l");
        assert!(written.notes.is_empty(), "{:?}", written.notes);
        assert!(
            written.text.contains(r#"respond = [{ text = ["Found it."], pause = { after = 2, ms = 4000 } }]"#),
            "{}",
            written.text
        );
    }

    #[test]
    fn text_splits_into_the_chunks_asked_for() {
        assert_eq!(split("Useful partial", 2), ["Useful ", "partial"]);
        assert_eq!(split("ab", 5), ["a", "b"]);
        assert_eq!(split("", 3), [""]);
    }
}
