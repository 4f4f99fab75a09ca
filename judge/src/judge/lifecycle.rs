//! The judge of lifecycle scenarios: a record stream against the contract, the scenario's
//! expectations and the golden `results.jsonl`.
//!
//! Pure, like the Turn judge. Invariants ([`ALL`], one rule per file in `lifecycle/`) hold on
//! every scenario of their family. Expectations are per step: each `expect` table must be a
//! subset of the record in the same place (objects by key, recursively; arrays element by
//! element with the same length, or by membership: [`subset`]), and the step must produce
//! exactly as many records. A
//! scenario of `behaviour = "reference"` pins an upstream quirk: missing its expectations is a
//! golden difference, not a contract failure.

mod anomalies_accumulate;
mod merge_no_stale_active;
mod nil_never_rendered;
mod no_parallel_turn;
mod no_user_notice_for_telegram_turns;
mod panel_not_recreated;
mod readings;
mod records_in_time;
mod stability_window;
mod stall_evidence;
mod terminal_stall_is_last;

use serde_json::Value;

use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Behaviour, Family, LifecycleScenario};
use crate::verdict::{Finding, Layer, Verdict};

pub use readings::Invariant;

/// Every lifecycle invariant.
pub const ALL: &[Invariant] = &[
    records_in_time::INVARIANT,
    anomalies_accumulate::INVARIANT,
    anomalies_accumulate::KEPT,
    stall_evidence::INVARIANT,
    stability_window::INVARIANT,
    terminal_stall_is_last::INVARIANT,
    nil_never_rendered::INVARIANT,
    merge_no_stale_active::INVARIANT,
    no_parallel_turn::INVARIANT,
    panel_not_recreated::INVARIANT,
    no_user_notice_for_telegram_turns::INVARIANT,
];

/// Judges a lifecycle capture: faults, invariants, expectations, then the golden findings.
pub fn judge(name: &str, scenario: &LifecycleScenario, capture: &LifecycleCapture, golden: Vec<Finding>) -> Verdict {
    let mut findings: Vec<Finding> =
        capture.faults.iter().map(|fault| Finding::new(Layer::Fault, None, fault.clone())).collect();
    for invariant in ALL.iter().filter(|invariant| invariant.applies.is_none_or(|family| family == scenario.family())) {
        for message in (invariant.check)(scenario, capture) {
            findings.push(Finding::new(Layer::Invariant, Some(invariant.id), message));
        }
    }
    findings.extend(expectations(scenario, capture));
    findings.extend(golden);
    Verdict::from_findings(name, states(scenario.family(), capture), findings)
}

/// What the summary table shows: each monitor result's status; each bridge record's kind with
/// its decisive word (a gate's action, a decision's outcome, a snapshot's turn status).
fn states(family: Family, capture: &LifecycleCapture) -> Vec<String> {
    let mut states: Vec<String> = Vec::new();
    for record in &capture.records {
        let kind = record[family.discriminator()].as_str().unwrap_or("-");
        let detail = ["action", "outcome", "latest_turn_status"].iter().find_map(|key| record[*key].as_str());
        let state = detail.map_or_else(|| kind.to_owned(), |detail| format!("{kind}:{detail}"));
        if family == Family::Monitor || states.last() != Some(&state) {
            states.push(state);
        }
    }
    states
}

/// Per-step expectations, each a finding against the scenario's first requirement.
fn expectations(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<Finding> {
    let (layer, note) = match scenario.behaviour {
        Behaviour::Requirement => (Layer::Expectation, ""),
        Behaviour::Reference => (Layer::Golden, " (reference behaviour, not a requirement)"),
    };
    let requirement = scenario.covers.first().map(String::as_str);
    let mut findings = Vec::new();
    for (idx, expected) in scenario.expect.iter().enumerate() {
        let Some(expected) = expected else { continue };
        let actual = capture.of_step(idx);
        let matches = actual.len() == expected.len() && expected.iter().zip(&actual).all(|(e, a)| subset(e, a));
        if !matches {
            let at = scenario.at_ms(idx).unwrap_or(0);
            let lines = |values: Vec<&Value>| -> String {
                if values.is_empty() {
                    return "    (nothing)\n".to_owned();
                }
                values.iter().map(|value| format!("    {}\n", gauntlet_agent::canonical::to_string(value))).collect()
            };
            let message = format!(
                "step {idx} (at {at} ms){note}: expected {} record(s) matching\n{}but the implementation gave\n{}",
                expected.len(),
                lines(expected.iter().collect()),
                lines(actual),
            );
            findings.push(Finding::new(layer, requirement, message.trim_end().to_owned()));
        }
    }
    findings
}

/// Whether `expected` is a subset of `actual`: objects key by key, arrays element by element
/// with the same length, numbers by value, everything else equal.
///
/// A table of only `contains`, `in_order` and `lacks` against an array states membership and
/// nothing else (BRIDGE-NOT-STEERABLE-BLOCKS asks for a `turn/steer` and no `turn/start`, not for
/// a whole call list): every `contains` pattern matches some element, the `in_order` patterns match
/// elements in that order (others may come between), and no `lacks` pattern matches any. A pattern
/// matches an element it is a subset of, and a string pattern also matches a string that begins
/// with it and a space, so `"turn/start"` names the method whatever its argument.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(expected), Value::Array(actual)) if is_membership(expected) => {
            let patterns = |key: &str| expected.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            let found = |pattern: &Value| actual.iter().any(|element| matches_element(pattern, element));
            let mut rest = actual.iter();
            let ordered =
                patterns("in_order").iter().all(|pattern| rest.any(|element| matches_element(pattern, element)));
            patterns("contains").iter().all(found) && ordered && !patterns("lacks").iter().any(found)
        }
        (Value::Object(expected), Value::Object(actual)) => {
            expected.iter().all(|(key, value)| actual.get(key).is_some_and(|actual| subset(value, actual)))
        }
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len() && expected.iter().zip(actual).all(|(e, a)| subset(e, a))
        }
        (Value::Number(expected), Value::Number(actual)) => expected.as_f64() == actual.as_f64(),
        _ => expected == actual,
    }
}

/// A table with only `contains`, `in_order` and `lacks` keys, each an array, and at least one.
fn is_membership(table: &serde_json::Map<String, Value>) -> bool {
    !table.is_empty()
        && table
            .iter()
            .all(|(key, value)| matches!(key.as_str(), "contains" | "in_order" | "lacks") && value.is_array())
}

fn matches_element(pattern: &Value, element: &Value) -> bool {
    match (pattern, element) {
        (Value::String(pattern), Value::String(element)) => {
            element == pattern || element.strip_prefix(pattern.as_str()).is_some_and(|rest| rest.starts_with(' '))
        }
        _ => subset(pattern, element),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn subsets_match_by_key_and_arrays_by_element() {
        let actual =
            json!({ "status": "ready", "anomalies": [{ "code": "stalled_entered", "details": {} }], "at_ms": 5 });
        assert!(subset(&json!({ "status": "ready" }), &actual));
        assert!(subset(&json!({ "anomalies": [{ "code": "stalled_entered" }] }), &actual));
        assert!(!subset(&json!({ "anomalies": [] }), &actual));
        assert!(!subset(&json!({ "missing": 1 }), &actual));
        assert!(subset(&json!({ "at_ms": 5.0 }), &actual));
    }

    #[test]
    fn membership_tables_pin_only_what_they_name() {
        let actual = json!({ "calls": ["thread/resume t", "thread/read t", "turn/steer turn-1", "thread/read t"] });
        let steered = json!({ "calls": { "contains": ["turn/steer turn-1"], "lacks": ["turn/start"] } });
        assert!(subset(&steered, &actual));
        assert!(subset(&json!({ "calls": { "contains": ["turn/steer"] } }), &actual));
        assert!(!subset(&json!({ "calls": { "lacks": ["thread/read"] } }), &actual));
        assert!(!subset(&json!({ "calls": { "contains": ["turn/steer turn-2"] } }), &actual));
        assert!(!subset(&json!({ "calls": { "contains": ["turn/ste"] } }), &actual), "a prefix must end at a word");
        let ordered = json!({ "calls": { "in_order": ["thread/resume", "turn/steer", "thread/read"] } });
        assert!(subset(&ordered, &actual));
        assert!(!subset(&json!({ "calls": { "in_order": ["turn/steer", "thread/resume"] } }), &actual));
        assert!(
            !subset(&json!({ "calls": { "in_order": ["turn/steer", "turn/steer"] } }), &actual),
            "one element per pattern"
        );
        // A table with other keys is an ordinary object, which never matches an array.
        assert!(!subset(&json!({ "calls": { "contains": [], "other": 1 } }), &actual));
        assert!(!subset(&json!({ "calls": {} }), &actual));
    }

    fn scenario(behaviour: &str) -> LifecycleScenario {
        let text = format!(
            "title = \"t\"\nkind = \"monitor.readiness\"\ncovers = [\"MON-PRIORITY\"]\nbehaviour = \"{behaviour}\"\n[[step]]\nat_ms = 0\nobserve = {{ business_state = \"idle\", input_mode = \"freeform\" }}\nexpect = [{{ status = \"ready\" }}]\n"
        );
        crate::lifecycle::parse(&text, Path::new("x.toml")).unwrap()
    }

    #[test]
    fn a_wrong_record_fails_its_requirement_with_both_sides_shown() {
        let capture = LifecycleCapture {
            records: vec![json!({ "step": 0, "at_ms": 0, "status": "waiting", "observed_at_ms": 0, "anomalies": [] })],
            ..Default::default()
        };
        let verdict = judge("monitor/x", &scenario("requirement"), &capture, Vec::new());
        assert_eq!(verdict.kind, crate::verdict::VerdictKind::Nonconformant);
        let message = &verdict.findings[0].message;
        assert!(message.contains("step 0 (at 0 ms): expected 1 record(s) matching"), "{message}");
        assert!(message.contains(r#"{"status":"ready"}"#) && message.contains(r#""status":"waiting""#), "{message}");
        assert_eq!(verdict.findings[0].requirement.as_deref(), Some("MON-PRIORITY"));
        let reference = judge("monitor/x", &scenario("reference"), &capture, Vec::new());
        assert_eq!(reference.kind, crate::verdict::VerdictKind::Conformant);
    }
}
