//! MON-ANOMALIES: a `stalled` result carries the `stalled_entered` anomaly (seed 002: "runtime
//! records the `stalled_entered` anomaly").
//!
//! Also MON-ANOMALIES-KEPT (a SHOULD, [`KEPT`]): anomalies accumulate over a run, every result
//! carrying all anomalies of the results before it, unchanged and in order. That is houmao's
//! code (reference A.2.5); that what the runtime "records" stays recorded is gauntlet's reading.

use serde_json::Value;

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant =
    Invariant { id: "MON-ANOMALIES", also: &[], name: "anomalies_accumulate", applies: Some(Family::Monitor), check };

/// The SHOULD: earlier anomalies are kept.
pub const KEPT: Invariant = Invariant {
    id: "MON-ANOMALIES-KEPT",
    also: &[],
    name: "anomalies_accumulate",
    applies: Some(Family::Monitor),
    check: check_kept,
};

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    if scenario.config["layer"] == "kernel" {
        return Vec::new();
    }
    let mut messages = Vec::new();
    for record in &capture.records {
        let Some(anomalies) = record["anomalies"].as_array() else {
            messages.push(format!("a result without an `anomalies` list: {record}"));
            continue;
        };
        if record["status"] == "stalled" && !anomalies.iter().any(|anomaly| anomaly["code"] == "stalled_entered") {
            messages.push(format!("a stalled result without a `stalled_entered` anomaly: {record}"));
        }
    }
    messages
}

fn check_kept(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    if scenario.config["layer"] == "kernel" {
        return Vec::new();
    }
    let mut messages = Vec::new();
    let mut previous: &[Value] = &[];
    for (record, anomalies) in
        capture.records.iter().filter_map(|record| Some((record, record["anomalies"].as_array()?)))
    {
        if !anomalies.starts_with(previous) {
            messages.push(format!(
                "a result lost or changed earlier anomalies: before {}, now {}: {record}",
                Value::from(previous.to_vec()),
                Value::from(anomalies.clone())
            ));
        }
        previous = anomalies;
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn lost_anomalies_and_an_unannounced_stall_are_caught() {
        let text = "title = \"t\"\nkind = \"monitor.readiness\"\n[[step]]\nat_ms = 0\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let entered = json!({ "code": "stalled_entered" });
        let capture = LifecycleCapture {
            records: vec![
                json!({ "step": 0, "at_ms": 0, "status": "stalled", "anomalies": [entered] }),
                json!({ "step": 0, "at_ms": 0, "status": "ready", "anomalies": [] }),
                json!({ "step": 0, "at_ms": 0, "status": "stalled", "anomalies": [] }),
            ],
            ..Default::default()
        };
        let messages = check(&scenario, &capture);
        assert_eq!(messages, [format!("a stalled result without a `stalled_entered` anomaly: {}", capture.records[2])]);
        let lost = check_kept(&scenario, &capture);
        assert_eq!(lost.len(), 1, "{lost:#?}");
        assert!(lost[0].contains("lost or changed"));
    }
}
