//! BRIDGE-RENDER-NIL-SAFE: nothing a person sees, nor any payload sent for them, carries a
//! Go stringification artifact: no text contains `<nil>` or `map[]` (Go's empty map, never
//! anyone's words), and no line of a text, nor the value after a line's label (`Output: []`),
//! is only `null`, `{}` or `[]`: a card's block holds its value inside other text (issue 31).
//! Judged on the rendered output itself, never on the implementation's own `contains_nil` flag.

use serde_json::Value;

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-RENDER-NIL-SAFE",
    also: &[],
    name: "nil_never_rendered",
    applies: Some(Family::Bridge),
    check,
};

/// Placeholders that must never stand for a missing value.
const PLACEHOLDERS: [&str; 4] = ["null", "{}", "[]", "map[]"];

fn check(_: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let mut messages = Vec::new();
    for record in &capture.records {
        let visible: &[&str] = match record["record"].as_str() {
            Some("rendered") => &["text", "options", "messages", "payload"],
            Some("decision") => &["reply"],
            _ => continue,
        };
        for field in visible {
            let mut texts = Vec::new();
            strings(&record[*field], &mut texts);
            for text in texts {
                if shows_nil(text) {
                    messages.push(format!("`{field}` shows {text:?}: {record}"));
                }
            }
        }
    }
    messages
}

/// Whether `text` shows a missing value as Go prints it.
fn shows_nil(text: &str) -> bool {
    let placeholder = |value: &str| PLACEHOLDERS.contains(&value.trim());
    text.contains("<nil>")
        || text.contains("map[]")
        || text
            .lines()
            .any(|line| placeholder(line) || line.rsplit_once(": ").is_some_and(|(_, value)| placeholder(value)))
}

/// Every string in `value`, recursively.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_nil_literal_or_placeholder_in_visible_text_is_caught() {
        let text = "title = \"t\"\nkind = \"bridge.render\"\n[[step]]\nat_ms = 0\ndo.render = { helper = \"rpc_string\", value = \"x\" }\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let capture = LifecycleCapture {
            records: vec![
                json!({ "record": "rendered", "text": "echo ok", "contains_nil": false }),
                json!({ "record": "rendered", "messages": ["Before <nil> after"], "contains_nil": false }),
                json!({ "record": "rendered", "payload": { "answers": "{}" } }),
                json!({ "record": "decision", "reply": "null" }),
                json!({ "record": "snapshot", "thread_status": "<nil>" }),
            ],
            ..Default::default()
        };
        let messages = check(&scenario, &capture);
        assert_eq!(messages.len(), 3, "{messages:#?}");
        assert!(messages[0].contains("`messages` shows \"Before <nil> after\""));
    }

    /// A placeholder inside a card's text is caught, where only a whole text was before; code
    /// that merely holds brackets is not (issue 31).
    #[test]
    fn a_placeholder_inside_a_card_is_caught_and_brackets_in_code_are_not() {
        assert!(shows_nil("[Tool] exec\nOutput: map[]"));
        assert!(shows_nil("Status: running\nDetails: null"));
        assert!(shows_nil("[]"));
        assert!(!shows_nil("let items = []; // empty\nfn f() {}"));
        assert!(!shows_nil("Output: 2 files"));
    }
}
