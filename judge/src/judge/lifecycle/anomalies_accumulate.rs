//! MON-ANOMALIES: anomalies accumulate over a run: every result carries all anomalies of the
//! results before it, unchanged and in order, and a `stalled` result carries `stalled_entered`.

use serde_json::Value;

use super::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant =
    Invariant { id: "MON-ANOMALIES", also: &[], name: "anomalies_accumulate", applies: Some(Family::Monitor), check };

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    if scenario.config["layer"] == "kernel" {
        return Vec::new();
    }
    let mut messages = Vec::new();
    let mut previous: &[Value] = &[];
    for record in &capture.records {
        let Some(anomalies) = record["anomalies"].as_array() else {
            messages.push(format!("a result without an `anomalies` list: {record}"));
            continue;
        };
        if !anomalies.starts_with(previous) {
            messages.push(format!(
                "a result lost or changed earlier anomalies: before {}, now {}: {record}",
                Value::from(previous.to_vec()),
                Value::from(anomalies.clone())
            ));
        }
        if record["status"] == "stalled" && !anomalies.iter().any(|anomaly| anomaly["code"] == "stalled_entered") {
            messages.push(format!("a stalled result without a `stalled_entered` anomaly: {record}"));
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
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].contains("lost or changed"));
        assert!(messages[1].contains("without a `stalled_entered`"));
    }
}
