//! LOG-NO-RESOURCE-BYTES: no Log line holds an image's bytes: no `data:` URL with a base64
//! payload, and none of the base64 payloads the scenario's prompts carried (seed 004
//! `Pixir.Event.user_message`: "raw image bytes or base64 payloads must never be placed in
//! the Log"; ADR 0021, Session Resources). A prompt's image is recorded as a descriptor:
//! identity and hash only.
//!
//! Evidence: every Log line as text, so the rule holds whatever key the bytes would hide
//! under: a `user_message` line with a base64 `data:` URL, or any line with a prompt image's
//! payload; without a scenario (`gauntlet audit`), the `data:` URL check alone.

use gauntlet_agent::EventType;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-NO-RESOURCE-BYTES",
    also: &[],
    name: "log_no_resource_bytes",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// What marks a base64 `data:` URL in JSON text.
const BASE64_URL: &str = ";base64,";

fn check(evidence: &Evidence) -> Vec<String> {
    let payloads: Vec<&str> = evidence
        .scenario
        .map(|scenario| scenario.turns.iter().flat_map(|turn| &turn.images).map(|image| image.data.as_str()).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for (idx, text) in evidence.capture.log.iter().enumerate() {
        let line = idx + 1;
        // A prompt's image as a data URL; file contents a tool read (a page embedding one) are
        // what the runtime must record, not a Session Resource.
        let prompt = crate::log_line::Line::parse(text).is_ok_and(|event| event.kind == EventType::UserMessage);
        if prompt && let Some(at) = data_url(text) {
            problems.push(format!("log line {line} holds a base64 `data:` URL: {}", excerpt(text, at)));
        } else if let Some(n) = payloads.iter().position(|payload| !payload.is_empty() && text.contains(payload)) {
            problems.push(format!("log line {line} holds the base64 payload of prompt image {}", n + 1));
        }
    }
    problems
}

/// Where `text` holds a base64 `data:` URL (`data:<media type>;base64,`), if it does.
fn data_url(text: &str) -> Option<usize> {
    text.match_indices(BASE64_URL).map(|(at, _)| at).find(|&at| {
        let before = &text[..at];
        before.rfind("data:").is_some_and(|start| {
            let media = &before[start + "data:".len()..];
            media.chars().all(|c| c.is_ascii_alphanumeric() || "/+.-".contains(c))
        })
    })
}

/// The text around `at`, short.
fn excerpt(text: &str, at: usize) -> String {
    let start = text[..at].char_indices().rev().nth(40).map_or(0, |(idx, _)| idx);
    let end = text[at..].char_indices().nth(40).map_or(text.len(), |(idx, _)| at + idx);
    format!("…{}…", &text[start..end])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check};

    #[test]
    fn a_descriptor_passes() {
        let descriptor = json!({"kind": "image", "mime_type": "image/png", "byte_length": 70, "sha256": "ab"});
        let events = [("user_message", json!({"text": "look", "resources": [descriptor]}))];
        assert!(check(INVARIANT, &capture(&events, &[])).is_empty());
    }

    #[test]
    fn a_data_url_is_named() {
        let events = [("user_message", json!({"text": "look", "image": "data:image/png;base64,iVBORw0KGgo="}))];
        let problems = check(INVARIANT, &capture(&events, &[]));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("log line 1 holds a base64 `data:` URL: "), "{}", problems[0]);
    }

    #[test]
    fn a_file_a_tool_read_may_embed_a_data_url() {
        let page = "<img src=\"data:image/png;base64,iVBORw0KGgo=\">";
        let events = [("tool_result", json!({"call_id": "c1", "ok": true, "output": page}))];
        assert!(check(INVARIANT, &capture(&events, &[])).is_empty());
    }
}
