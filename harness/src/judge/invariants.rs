//! Invariants: contract rules checked on every scenario's capture, whatever it is about.
//!
//! One rule per file, named for the rule, its requirement id first in its `//!` line, tests
//! inside. [`ALL`] lists them; docs/contract.md names them in its "checked by" column.

mod audit_only_not_replayed;
mod failure_evidence_complete;
mod log_canonical_only;
mod log_seq_gapless;
mod no_partial_text_replayed;
mod provider_script_strict;
mod terminal_evidence;
mod tool_calls_paired;

use serde_json::Value;

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
    terminal_evidence::INVARIANT,
    failure_evidence_complete::INVARIANT,
    no_partial_text_replayed::INVARIANT,
    audit_only_not_replayed::INVARIANT,
    tool_calls_paired::INVARIANT,
    provider_script_strict::INVARIANT,
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

    /// A request body with these input items.
    pub fn body(input: Vec<Value>) -> Value {
        json!({"model": "m", "input": input, "store": false, "stream": true})
    }
}
