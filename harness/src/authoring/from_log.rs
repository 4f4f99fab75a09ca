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
//! | `cancelled` | a long pause, and `cancel` at the first text chunk (or when sent); `cancel` at the tool call when a tool was interrupted |
//!
//! Text is cut into as many chunks as the failure's frame count says were streamed, so the
//! failure's details match too. A `read` that succeeded puts its output in `[workspace]` (unless
//! the Log wrote that file first). `expect` and `error_kind` come from the audited terminal
//! states ([`crate::audit`]). What a Log cannot say (a preloaded earlier run, a torn tail, a
//! busy prompt, a reload) is left out; the round-trip test lists the scenarios that need it.

use std::collections::BTreeMap;
use std::fmt::Write;

use gauntlet_runtime::TerminalStatus;
use serde_json::Value;

use crate::audit::{self, Line};
use crate::scenario::Config;

/// A Provider call as the Log shows it.
#[derive(Debug, Default)]
struct Call {
    /// The call's `provider_usage`, when it finished.
    usage: Option<Value>,
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

/// One `[[turn]]` being written.
#[derive(Debug, Default)]
struct TurnDraft {
    prompt: String,
    model: Option<String>,
    responses: Vec<String>,
    expect: Option<TerminalStatus>,
    error_kind: Option<String>,
    stop_reason: Option<&'static str>,
    cancel: Option<&'static str>,
}

/// A scenario reproducing `log` (its lines), titled after `source`.
pub fn scenario(log: &[String], source: &str) -> String {
    let (lines, _) = audit::parse_lines(log);
    let audited = audit::audit(log);
    let mut config = Config::default();
    let first_model = lines
        .iter()
        .find(|line| line.kind == "provider_usage")
        .and_then(|line| line.str_field("model"))
        .map(str::to_owned);
    if let Some(model) = &first_model {
        config.model.clone_from(model);
    }
    let mut workspace: BTreeMap<String, String> = BTreeMap::new();
    let mut written: Vec<String> = Vec::new();
    let mut turns: Vec<TurnDraft> = Vec::new();
    let mut model = config.model.clone();
    let starts: Vec<usize> =
        lines.iter().enumerate().filter(|(_, line)| line.kind == "user_message").map(|(idx, _)| idx).collect();
    for (turn_idx, &start) in starts.iter().enumerate() {
        let end = starts.get(turn_idx + 1).copied().unwrap_or(lines.len());
        let events = &lines[start + 1..end];
        let mut turn =
            TurnDraft { prompt: lines[start].str_field("text").unwrap_or_default().to_owned(), ..TurnDraft::default() };
        let mut calls: Vec<Call> = Vec::new();
        let mut failure: Option<&Line> = None;
        let mut pending_reads: BTreeMap<String, String> = BTreeMap::new();
        // A tool the cancel interrupted: the turn was cancelled while it ran.
        let mut tool_interrupted = false;
        for line in events {
            match line.kind.as_str() {
                "provider_usage" => {
                    calls.push(Call { usage: Some(line.data.clone()), ..Call::default() });
                }
                "reasoning" => {
                    let item = line.data.get("item").cloned().unwrap_or(Value::Null);
                    let summary = item
                        .get("summary")
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).map(str::to_owned)
                        })
                        .into_iter()
                        .flatten()
                        .collect();
                    let encrypted = item.get("encrypted_content").and_then(Value::as_str).map(str::to_owned);
                    open_call(&mut calls, Part::Reasoning).reasoning.push((summary, encrypted));
                }
                "assistant_message" => {
                    let call = open_call(&mut calls, Part::Text);
                    call.text = line.str_field("text").map(str::to_owned);
                    call.truncation = line
                        .data
                        .pointer("/metadata/output_truncation/reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                "tool_call" => {
                    let name = line.str_field("name").unwrap_or_default().to_owned();
                    let args = line.data.get("args").cloned().unwrap_or(Value::Object(Default::default()));
                    let call_id = line.str_field("call_id").map(str::to_owned);
                    match (name.as_str(), args.get("path").and_then(Value::as_str)) {
                        ("write", Some(path)) => written.push(path.to_owned()),
                        ("read", Some(path)) if !written.iter().any(|known| known == path) => {
                            pending_reads.insert(call_id.clone().unwrap_or_default(), path.to_owned());
                        }
                        _ => {}
                    }
                    open_call(&mut calls, Part::ToolCall).calls.push((name, args, call_id));
                }
                "tool_result" => {
                    if let Some(last) = calls.last_mut() {
                        last.closed = true;
                    }
                    let call_id = line.str_field("call_id").unwrap_or_default();
                    tool_interrupted |=
                        line.data.pointer("/error/details/reason").and_then(Value::as_str) == Some("interrupt");
                    if let Some(path) = pending_reads.remove(call_id)
                        && line.data.get("ok").and_then(Value::as_bool) == Some(true)
                        && let Some(output) = line.str_field("output")
                    {
                        workspace.entry(path).or_insert_with(|| output.to_owned());
                    }
                }
                "turn_failed" => failure = Some(line),
                _ => {}
            }
        }
        if let Some(usage_model) = calls.iter().find_map(|call| call.usage.as_ref()?.get("model")?.as_str())
            && usage_model != model
        {
            turn.model = Some(usage_model.to_owned());
            usage_model.clone_into(&mut model);
        }
        // The call the turn failed in: one without usage that is still open, else a new one.
        let cancelled_in_tool =
            tool_interrupted && failure.and_then(|failed| failed.str_field("error_kind")) == Some("cancelled");
        if cancelled_in_tool {
            turn.cancel = Some("tool_call");
        }
        let failed_call = match (failure, calls.last()) {
            _ if cancelled_in_tool => None,
            (Some(_), Some(last)) if last.usage.is_none() && !last.closed => calls.pop(),
            (Some(_), _) => Some(Call::default()),
            (None, _) => None,
        };
        for call in &calls {
            turn.responses.extend(finished_responses(call, &mut config));
        }
        if let (Some(failed), Some(call)) = (failure, failed_call) {
            let responses = failed_responses(&call, failed, &mut config, &mut turn);
            turn.responses.extend(responses);
        }
        if let Some(audited) = audited.turns.get(turn_idx) {
            turn.expect = audited.terminal_status;
            turn.error_kind.clone_from(&audited.error_kind);
        }
        if turn.expect == Some(TerminalStatus::Completed) {
            turn.stop_reason = match calls.last().and_then(|call| call.truncation.as_deref()) {
                Some("content_filter") => Some("refusal"),
                Some(_) => Some("max_tokens"),
                None => None,
            };
        }
        turns.push(turn);
    }
    render(source, &config, &workspace, &turns)
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
fn finished_responses(call: &Call, config: &mut Config) -> Vec<String> {
    let usage = call.usage.as_ref();
    let attempts = usage.and_then(|usage| usage.get("attempts")).and_then(Value::as_u64).unwrap_or(1);
    let retries = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
    config.max_retries = config.max_retries.max(retries);
    let mut responses: Vec<String> = (1..attempts).map(|_| "{ status = 500 }".to_owned()).collect();
    let mut fields = output_fields(call, 1);
    if let Some(usage) = usage.and_then(|usage| usage.get("usage")) {
        let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let scripted = (
            number("/input_tokens"),
            number("/input_tokens_details/cached_tokens"),
            number("/output_tokens"),
            number("/output_tokens_details/reasoning_tokens"),
        );
        if scripted != (100, 0, 10, 0) {
            fields.push(format!(
                "usage = {{ input = {}, cached = {}, output = {}, reasoning = {} }}",
                scripted.0, scripted.1, scripted.2, scripted.3
            ));
        }
    }
    if let Some(reason) = &call.truncation {
        fields.push(format!("then = {{ incomplete = {} }}", quoted(reason)));
    }
    responses.push(inline(&fields));
    responses
}

/// The responses of the call a turn failed in, from its partial output and `turn_failed`;
/// adjusts `config` and the turn for timeouts and cancels.
fn failed_responses(call: &Call, failed: &Line, config: &mut Config, turn: &mut TurnDraft) -> Vec<String> {
    let detail = |key: &str| failed.data.pointer(&format!("/details/{key}"));
    let number = |key: &str| detail(key).and_then(Value::as_u64);
    let attempts = number("attempts").unwrap_or(1);
    let reasoning_frames: u64 = call.reasoning.iter().map(|(summary, _)| summary.len() as u64 + 5).sum();
    // Frames before the first text delta: created, in_progress, reasoning, item and part added.
    let before_text = 2 + reasoning_frames + 2;
    let chunks_from = |frames_with_text: Option<u64>, extra: u64| {
        frames_with_text.map_or(1, |frames| frames.saturating_sub(before_text + 3 + extra).max(1))
    };
    let retried = |ending: &str| (1..attempts).map(|_| ending.to_owned()).collect::<Vec<_>>();
    let ending = |then: String, chunks: u64| {
        let mut fields = output_fields(call, chunks);
        fields.push(then);
        inline(&fields)
    };
    let long_pause = |ms: u64, chunks: u64| {
        let after = if call.text.is_some() { before_text + chunks } else { 2 + reasoning_frames };
        let mut fields = output_fields(call, chunks);
        fields.push(format!("pause = {{ after = {after}, ms = {ms} }}"));
        inline(&fields)
    };
    match failed.str_field("error_kind").unwrap_or_default() {
        "rate_limited" | "provider_http_error" if number("status").is_some() => {
            let status = number("status").unwrap_or(500);
            let retry_after =
                number("retry_after_s").map(|seconds| format!(", retry_after = {seconds}")).unwrap_or_default();
            // The runtime gave up after these attempts: exactly this many retries.
            config.max_retries = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
            (0..attempts).map(|_| format!("{{ status = {status}{retry_after} }}")).collect()
        }
        "provider_http_error" => {
            let code = failed.data.pointer("/details/code").and_then(Value::as_str).unwrap_or("server_error");
            let then = match detail("event_type").and_then(Value::as_str) {
                Some("response.failed") => format!("then = {{ failed = {} }}", quoted(code)),
                _ => format!("then = {{ error = {} }}", quoted(code)),
            };
            let mut responses = retried("{ status = 500 }");
            // The error frame follows the text's done frames (text, part, item).
            responses.push(ending(then, chunks_from(number("frame_index"), 1)));
            responses
        }
        "network" => {
            let mut responses = retried("{ then = \"disconnect\" }");
            responses.push(ending("then = \"disconnect\"".to_owned(), 1));
            responses
        }
        "incomplete_stream" => {
            let mut responses = retried("{ status = 500 }");
            responses.push(ending("then = \"eof\"".to_owned(), chunks_from(number("frames"), 0)));
            responses
        }
        "invalid_response" => vec![ending("then = \"malformed\"".to_owned(), 1)],
        "stream_idle_timeout" => {
            let timeout = number("timeout_ms").unwrap_or(config.stream_idle_timeout_ms);
            config.stream_idle_timeout_ms = timeout;
            let mut responses = retried("{ status = 500 }");
            responses.push(long_pause(timeout.saturating_mul(2), 1));
            responses
        }
        "turn_timeout" => {
            let timeout = number("timeout_ms").unwrap_or(config.turn_timeout_ms);
            config.turn_timeout_ms = timeout;
            if config.stream_idle_timeout_ms <= timeout {
                config.stream_idle_timeout_ms = timeout.saturating_mul(2);
            }
            vec![long_pause(timeout, 1)]
        }
        "cancelled" => {
            turn.cancel = Some(if call.text.is_some() { "first_delta" } else { "sent" });
            vec![long_pause(3_600_000, 1)]
        }
        _ => vec![ending("then = { error = \"server_error\" }".to_owned(), 1)],
    }
}

/// The `reasoning`, `text` and `calls` keys of a call's output, its text in `chunks` pieces.
fn output_fields(call: &Call, chunks: u64) -> Vec<String> {
    let mut fields = Vec::new();
    if !call.reasoning.is_empty() {
        let items: Vec<String> = call
            .reasoning
            .iter()
            .map(|(summary, encrypted)| {
                let mut item = vec![format!("summary = {}", strings(summary))];
                if let Some(encrypted) = encrypted {
                    item.push(format!("encrypted = {}", quoted(encrypted)));
                }
                inline(&item)
            })
            .collect();
        fields.push(format!("reasoning = [{}]", items.join(", ")));
    }
    if let Some(text) = &call.text {
        fields.push(format!("text = {}", strings(&split(text, chunks))));
    }
    if !call.calls.is_empty() {
        let items: Vec<String> = call
            .calls
            .iter()
            .map(|(name, args, call_id)| {
                let mut item = vec![format!("name = {}", quoted(name)), format!("args = {}", toml_value(args))];
                if let Some(call_id) = call_id {
                    item.push(format!("call_id = {}", quoted(call_id)));
                }
                inline(&item)
            })
            .collect();
        fields.push(format!("calls = [{}]", items.join(", ")));
    }
    fields
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

fn inline(fields: &[String]) -> String {
    if fields.is_empty() { "{}".to_owned() } else { format!("{{ {} }}", fields.join(", ")) }
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn strings(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|item| quoted(item)).collect::<Vec<_>>().join(", "))
}

/// A JSON value as an inline TOML value (TOML has no null: a null becomes `""`).
fn toml_value(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => quoted(text),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let fields: Vec<String> =
                map.iter().map(|(key, value)| format!("{} = {}", toml_key(key), toml_value(value))).collect();
            inline(&fields)
        }
    }
}

fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_owned()
    } else {
        quoted(key)
    }
}

fn render(source: &str, config: &Config, workspace: &BTreeMap<String, String>, turns: &[TurnDraft]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "#:schema ../../docs/schema/scenario.schema.json");
    let _ = writeln!(out, "# Written by `gauntlet new --from-log` from {source}; read it, then run it with --bless.");
    let _ = writeln!(out, "title = {}", quoted(&format!("Reproduces {source}")));
    let _ = writeln!(out, "covers = []");
    let defaults = Config::default();
    let mut settings = Vec::new();
    if config.model != defaults.model {
        settings.push(format!("model = {}", quoted(&config.model)));
    }
    if config.stream_idle_timeout_ms != defaults.stream_idle_timeout_ms {
        settings.push(format!("stream_idle_timeout_ms = {}", config.stream_idle_timeout_ms));
    }
    if config.turn_timeout_ms != defaults.turn_timeout_ms {
        settings.push(format!("turn_timeout_ms = {}", config.turn_timeout_ms));
    }
    if config.max_retries != defaults.max_retries {
        settings.push(format!("max_retries = {}", config.max_retries));
    }
    if !settings.is_empty() {
        let _ = writeln!(out, "\n[config]\n{}", settings.join("\n"));
    }
    if !workspace.is_empty() {
        let _ = writeln!(out, "\n[workspace]");
        for (path, content) in workspace {
            let _ = writeln!(out, "{} = {}", quoted(path), quoted(content));
        }
    }
    for turn in turns {
        let _ = writeln!(out, "\n[[turn]]\nprompt = {}", quoted(&turn.prompt));
        match turn.expect {
            Some(status) => {
                let _ = writeln!(out, "expect = {}", quoted(status.as_str()));
            }
            None => {
                let _ = writeln!(out, "# The Log shows no terminal evidence for this turn.");
            }
        }
        if let Some(kind) = &turn.error_kind {
            let _ = writeln!(out, "error_kind = {}", quoted(kind));
        }
        if let Some(reason) = turn.stop_reason {
            let _ = writeln!(out, "stop_reason = {}", quoted(reason));
        }
        if let Some(model) = &turn.model {
            let _ = writeln!(out, "model = {}", quoted(model));
        }
        if let Some(trigger) = turn.cancel {
            let _ = writeln!(out, "cancel = {}", quoted(trigger));
        }
        match turn.responses.as_slice() {
            [] => {
                let _ = writeln!(out, "respond = []");
            }
            [one] => {
                let _ = writeln!(out, "respond = [{one}]");
            }
            many => {
                let _ = writeln!(out, "respond = [\n{}]", many.iter().map(|r| format!("  {r},\n")).collect::<String>());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_into_the_chunks_asked_for() {
        assert_eq!(split("Useful partial", 2), ["Useful ", "partial"]);
        assert_eq!(split("ab", 5), ["a", "b"]);
        assert_eq!(split("", 3), [""]);
    }

    #[test]
    fn json_arguments_become_inline_toml() {
        let args = serde_json::json!({"path": "a.txt", "n": 2, "odd key": [true]});
        // In the order the Log holds them (sorted there).
        assert_eq!(toml_value(&args), r#"{ path = "a.txt", n = 2, "odd key" = [true] }"#);
    }
}
