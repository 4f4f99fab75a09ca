//! BRIDGE-NOT-STEERABLE-BLOCKS: an input that steered the active turn, or that the bridge
//! refused because a turn is active, starts no turn beside it (seed 003: "The 'do not start a
//! parallel turn' guard remains in place for real active-turn conflicts"; "turn/steer errors
//! that indicate active/in-flight/not-steerable state still block fallback turn/start").
//!
//! Judged on every `decision` record whose outcome is `steered` or `blocked`: its calls hold no
//! `turn/start`. That input to an active turn is steered at all is BRIDGE-STEER-ACTIVE's (a
//! SHOULD: the seed says routing "prefers steering").

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-NOT-STEERABLE-BLOCKS",
    also: &[],
    name: "no_parallel_turn",
    applies: Some(Family::Bridge),
    check,
};

/// The outcomes of an input that met an active turn.
const MET_AN_ACTIVE_TURN: [&str; 2] = ["steered", "blocked"];

fn check(_: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let decisions = capture.records.iter().filter(|record| record["record"] == "decision");
    let met = decisions
        .filter(|record| record["outcome"].as_str().is_some_and(|outcome| MET_AN_ACTIVE_TURN.contains(&outcome)));
    met.filter(|record| {
        let calls = record["calls"].as_array().into_iter().flatten();
        calls.filter_map(|call| call.as_str()).any(|call| call.starts_with("turn/start"))
    })
    .map(|record| {
        format!("an input that was {} also started a turn beside the active one: {record}", record["outcome"])
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_turn_started_beside_a_steered_or_refused_input_is_caught() {
        let scenario = crate::lifecycle::parse(
            "title = \"t\"\nkind = \"bridge.steer\"\n[[step]]\nat_ms = 0\ndo.input = { text = \"x\" }\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let decision = |outcome: &str, calls: &[&str]| json!({ "record": "decision", "step": 0, "outcome": outcome, "calls": calls });
        let capture = LifecycleCapture {
            records: vec![
                decision("steered", &["turn/steer turn-1", "thread/read thread-1"]),
                decision("steered", &["turn/steer turn-1", "turn/start thread-1"]),
                decision("blocked", &["turn/steer turn-1", "turn/start thread-1"]),
                decision("started", &["turn/steer turn-1", "thread/read thread-1", "turn/start thread-1"]),
            ],
            ..Default::default()
        };
        let messages = check(&scenario, &capture);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("an input that was \"steered\" also started a turn"));
        assert!(messages[1].starts_with("an input that was \"blocked\" also started a turn"));
    }
}
