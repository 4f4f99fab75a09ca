//! LOG-NO-EPHEMERAL: every Log line is a canonical Event envelope; no ephemeral type is logged.

use gauntlet_agent::EventType;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-NO-EPHEMERAL",
    also: &["LOG-ENVELOPE"],
    name: "log_canonical_only",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

const ENVELOPE: [&str; 6] = ["data", "id", "seq", "session_id", "ts", "type"];

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for (idx, text) in evidence.capture.log.iter().enumerate() {
        let line = idx + 1;
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(text) else {
            problems.push(format!("log line {line} is not a JSON object: {text}"));
            continue;
        };
        let keys: Vec<&str> = event.keys().map(String::as_str).collect();
        if keys != ENVELOPE {
            problems.push(format!("log line {line} has keys {keys:?}, expected exactly {ENVELOPE:?}"));
        }
        match serde_json::from_value::<EventType>(event.get("type").cloned().unwrap_or_default()) {
            Ok(kind) if kind.is_ephemeral() => {
                problems.push(format!("log line {line} holds ephemeral event `{}`", kind.as_str()))
            }
            Ok(_) => {}
            Err(_) => problems.push(format!("log line {line} has unknown type {}", event["type"])),
        }
        if !event.get("data").is_some_and(Value::is_object) {
            problems.push(format!("log line {line}: `data` is not an object"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check};

    #[test]
    fn accepts_canonical_events() {
        assert!(check(INVARIANT, &capture(&[("user_message", json!({"text": "a"}))], &[])).is_empty());
    }

    #[test]
    fn flags_a_logged_text_delta() {
        let problems = check(INVARIANT, &capture(&[("text_delta", json!({"chunk": "a"}))], &[]));
        assert_eq!(problems, ["log line 1 holds ephemeral event `text_delta`"]);
    }
}
