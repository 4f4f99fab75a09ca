//! Invariants: contract rules checked on every scenario's capture, whatever it is about.
//!
//! One rule per file, named for the rule, its requirement id first in its `//!` line, tests
//! inside. [`ALL`] lists them; docs/contract.md names them in its "checked by" column.

mod audit_only_not_replayed;
mod busy_prompt_refused;
mod cancel_closes_request;
mod client_text_once;
mod delegation_acp_truthful;
mod error_data_complete;
mod failure_evidence_complete;
mod jsonrpc_errors_standard;
mod load_replays_clean_transcript;
mod log_canonical_only;
mod log_ids_unique;
mod log_seq_gapless;
mod no_duplicate_assistant;
mod no_partial_text_replayed;
mod no_retry_after_text;
mod provider_script_strict;
mod retries_bounded;
mod stop_reason_matches_log;
mod subagent_replay_terminal_only;
mod subagent_terminal_evidence;
mod terminal_evidence;
mod tool_calls_paired;
mod turns_terminated;
mod workflow_ok_only_when_complete;
mod workflow_schedule_safe;

use gauntlet_mock_provider::Response;
use serde_json::Value;

use crate::capture::Request;
use crate::judge::Evidence;
use crate::verdict::{Finding, Layer};

/// One contract rule.
#[derive(Debug, Clone, Copy)]
pub struct Invariant {
    /// The requirement id in docs/contract.md that its findings carry.
    pub id: &'static str,
    /// Further requirement ids this rule also checks in part.
    pub also: &'static [&'static str],
    /// The file (and rule) name.
    pub name: &'static str,
    /// Returns one message per violation, with evidence.
    pub check: fn(&Evidence) -> Vec<String>,
}

/// Every invariant, checked on every capture.
pub const ALL: &[Invariant] = &[
    log_canonical_only::INVARIANT,
    log_seq_gapless::INVARIANT,
    log_ids_unique::INVARIANT,
    terminal_evidence::INVARIANT,
    turns_terminated::INVARIANT,
    failure_evidence_complete::INVARIANT,
    no_partial_text_replayed::INVARIANT,
    audit_only_not_replayed::INVARIANT,
    tool_calls_paired::INVARIANT,
    provider_script_strict::INVARIANT,
    stop_reason_matches_log::INVARIANT,
    load_replays_clean_transcript::INVARIANT,
    busy_prompt_refused::INVARIANT,
    jsonrpc_errors_standard::INVARIANT,
    no_retry_after_text::INVARIANT,
    client_text_once::INVARIANT,
    retries_bounded::INVARIANT,
    no_duplicate_assistant::INVARIANT,
    error_data_complete::INVARIANT,
    cancel_closes_request::INVARIANT,
    subagent_terminal_evidence::INVARIANT,
    subagent_replay_terminal_only::INVARIANT,
    workflow_ok_only_when_complete::INVARIANT,
    workflow_schedule_safe::INVARIANT,
    delegation_acp_truthful::INVARIANT,
];

/// Runs every invariant.
pub fn check_all(evidence: &Evidence) -> Vec<Finding> {
    ALL.iter()
        .flat_map(|invariant| {
            (invariant.check)(evidence)
                .into_iter()
                .map(|message| Finding::new(Layer::Invariant, Some(invariant.id), message))
        })
        .collect()
}

/// The `input` items of a request body.
fn input_items(body: &Value) -> &[Value] {
    body.get("input").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The texts of an input message item's content parts.
fn item_texts(item: &Value) -> Vec<&str> {
    match item.get("content") {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(parts)) => parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    }
}

/// The texts of the user messages of a request body.
fn user_texts(body: &Value) -> Vec<&str> {
    input_items(body)
        .iter()
        .filter(|item| item.get("role").and_then(Value::as_str) == Some("user"))
        .flat_map(item_texts)
        .collect()
}

/// Which scenario turn each Provider request belongs to: the latest turn whose prompt the
/// request carries as user text (a request carries every earlier prompt too). `None` without a
/// scenario, or for a request that carries no prompt of it.
fn request_turns(evidence: &Evidence) -> Vec<Option<usize>> {
    let Some(scenario) = evidence.scenario else { return vec![None; evidence.capture.requests.len()] };
    evidence
        .capture
        .requests
        .iter()
        .map(|request| {
            let texts = user_texts(&request.body);
            scenario.turns.iter().rposition(|turn| texts.iter().any(|text| text.contains(turn.prompt.as_str())))
        })
        .collect()
}

/// The scripted response that answered a request, if the script answered it.
fn served<'a>(evidence: &Evidence<'a>, request: &Request) -> Option<&'a Response> {
    let scenario = evidence.scenario?;
    if request.route != gauntlet_mock_provider::ROOT {
        return None;
    }
    scenario.turns.iter().flat_map(|turn| turn.respond.iter()).nth(request.response_index?)
}

/// One `session/prompt` in a transcript: the request, its answer and the updates between.
#[derive(Debug)]
struct Exchange<'a> {
    /// The prompt's text.
    text: String,
    /// Sent while another prompt of the same Session was still unanswered.
    busy: bool,
    /// The answer, if one came.
    answer: Option<&'a Value>,
    /// `session/update` payloads that arrived while it was the running prompt.
    updates: Vec<&'a Value>,
}

/// The prompts of a transcript, in order.
fn exchanges(transcript: &[Value]) -> Vec<Exchange<'_>> {
    let mut exchanges: Vec<Exchange> = Vec::new();
    let mut ids: Vec<(Value, usize)> = Vec::new();
    let mut running: Option<usize> = None;
    for entry in transcript {
        let Some(message) = entry.get("message") else { continue };
        let from_client = entry.get("from").and_then(Value::as_str) == Some("client");
        if from_client && message.get("method").and_then(Value::as_str) == Some("initialize") {
            // A new connection: request ids start over.
            ids.clear();
            running = None;
        }
        if from_client && message.get("method").and_then(Value::as_str) == Some("session/prompt") {
            let text = message.pointer("/params/prompt/0/text").and_then(Value::as_str).unwrap_or_default();
            let busy = running.is_some();
            exchanges.push(Exchange { text: text.to_owned(), busy, answer: None, updates: Vec::new() });
            ids.push((message.get("id").cloned().unwrap_or(Value::Null), exchanges.len() - 1));
            if !busy {
                running = Some(exchanges.len() - 1);
            }
        } else if !from_client && let Some(update) = message.pointer("/params/update") {
            if let Some(idx) = running {
                exchanges[idx].updates.push(update);
            }
        } else if !from_client && let Some(&(_, idx)) = ids.iter().find(|(id, _)| Some(id) == message.get("id")) {
            exchanges[idx].answer = Some(message);
            if running == Some(idx) {
                running = None;
            }
        }
    }
    exchanges
}

/// The text of a content-chunk update of the given kind.
fn chunk_text<'a>(update: &'a Value, kind: &str) -> Option<&'a str> {
    (update.get("sessionUpdate").and_then(Value::as_str) == Some(kind))
        .then(|| update.pointer("/content/text").and_then(Value::as_str))
        .flatten()
}

#[cfg(test)]
pub(crate) mod fixture {
    //! Hand-made captures for invariant tests.

    use serde_json::{Value, json};

    use crate::capture::{Capture, Request};
    use crate::judge::Evidence;

    /// A capture whose Log holds `events` as `(type, data)` with seqs from 0.
    pub fn capture(events: &[(&str, Value)], bodies: &[Value]) -> Capture {
        let log = events
            .iter()
            .enumerate()
            .map(|(seq, (kind, data))| {
                json!({"data": data, "id": format!("{seq:016x}"), "seq": seq, "session_id": "s", "ts": "t", "type": kind})
                    .to_string()
            })
            .collect();
        let requests = bodies
            .iter()
            .enumerate()
            .map(|(idx, body)| Request { route: "root".into(), response_index: Some(idx), body: body.clone() })
            .collect();
        Capture { log, requests, ..Capture::default() }
    }

    /// Runs one invariant on a capture.
    pub fn check(invariant: super::Invariant, capture: &Capture) -> Vec<String> {
        (invariant.check)(&Evidence::new(capture))
    }

    /// A user input item.
    pub fn user(text: &str) -> Value {
        json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    /// An assistant input item.
    pub fn assistant(text: &str) -> Value {
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    }

    /// A transcript entry.
    pub fn entry(from: &str, message: Value) -> Value {
        json!({"from": from, "message": message})
    }

    /// A `session/update` notification with an agent text chunk.
    pub fn chunk(kind: &str, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
    }

    /// A `session/prompt` request.
    pub fn prompt(id: i64, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}})
    }

    /// A request body with these input items.
    pub fn body(input: Vec<Value>) -> Value {
        json!({"model": "m", "input": input, "store": false, "stream": true})
    }

    /// A scenario from TOML text.
    pub fn scenario(text: &str) -> crate::scenario::Scenario {
        crate::scenario::parse(text, std::path::Path::new("fixture.toml")).unwrap()
    }

    /// Runs one invariant on a capture of `scenario`.
    pub fn check_played(
        invariant: super::Invariant,
        capture: &Capture,
        scenario: &crate::scenario::Scenario,
    ) -> Vec<String> {
        (invariant.check)(&Evidence::of_scenario(capture, scenario))
    }

    /// Requests answered by script responses 0, 1, 2... in order.
    pub fn requests(bodies: Vec<Value>) -> Vec<Request> {
        bodies
            .into_iter()
            .enumerate()
            .map(|(idx, body)| Request { route: "root".into(), response_index: Some(idx), body })
            .collect()
    }
}
