//! MON-STABILITY-WINDOW: a completion candidate completes only after it kept its signature for
//! `stability_ms` (default 1000, MON-DEFAULTS): a `completed` record comes at least that long
//! after the observation it completes, and a kernel record's `candidate_elapsed_ms` says as
//! much. A completion the observer saw (a `completion_payload`) bypasses the window
//! (MON-OBSERVER-BYPASS), and so does one that recovers straight from `stalled`
//! (MON-STALL-RECOVERY: the known observation is classified as it is); a run already completed
//! re-emits `completed` at each later observation (MON-REF-REEMISSION).

use serde_json::Value;

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "MON-STABILITY-WINDOW",
    also: &[],
    name: "stability_window",
    applies: Some(Family::Monitor),
    check,
};

/// The window when the scenario's config gives none.
const DEFAULT_STABILITY_MS: u64 = 1_000;

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let window = scenario.config["stability_ms"].as_u64().unwrap_or(DEFAULT_STABILITY_MS);
    let records = &capture.records;
    records
        .iter()
        .enumerate()
        .filter(|(_, record)| record["status"] == "completed" && record.get("completion_payload").is_none())
        .filter(|(idx, _)| {
            let before = idx.checked_sub(1).map(|before| &records[before]);
            // Right after a stall, or once the run is completed (each later observation of the
            // same surface re-emits `completed`), the window was already judged or does not apply.
            !before.is_some_and(|before| before["status"] == "stalled" || before["status"] == "completed")
        })
        .filter_map(|(_, record)| {
            let number = |key: &str| record.get(key).and_then(Value::as_u64);
            let (at, observed) = (number("at_ms")?, number("observed_at_ms")?);
            let stable = number("candidate_elapsed_ms").unwrap_or(at.saturating_sub(observed));
            (at.saturating_sub(observed) < window || stable < window).then(|| {
                format!(
                    "completed at {at} ms on a candidate observed at {observed} ms, stable for {stable} ms: \
                     short of the stability window of {window} ms: {record}"
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn an_early_completion_is_caught_an_observed_one_is_not() {
        let text = "title = \"t\"\nkind = \"monitor.completion\"\n[config]\nstability_ms = 1000\n[[step]]\nat_ms = 0\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let capture = LifecycleCapture {
            records: vec![
                json!({ "status": "completed", "at_ms": 1100, "observed_at_ms": 100 }),
                json!({ "status": "waiting" }),
                json!({ "status": "completed", "at_ms": 900, "observed_at_ms": 100 }),
                json!({ "status": "waiting" }),
                json!({ "status": "completed", "at_ms": 1000, "observed_at_ms": 1000, "completion_payload": {} }),
                json!({ "status": "waiting" }),
                json!({ "status": "completed", "at_ms": 2800, "observed_at_ms": 1800, "candidate_elapsed_ms": 600 }),
                json!({ "status": "stalled", "at_ms": 3000 }),
                json!({ "status": "completed", "at_ms": 3100, "observed_at_ms": 3100 }),
                json!({ "status": "completed", "at_ms": 3200, "observed_at_ms": 3200 }),
            ],
            ..Default::default()
        };
        let messages = check(&scenario, &capture);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(
            messages[0].contains("stable for 800 ms") && messages[1].contains("stable for 600 ms"),
            "{messages:#?}"
        );
    }
}
