//! MON-STALLED-TERMINAL: with `stalled_is_terminal`, a stalled result is the run's last word;
//! nothing recovers from it.

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "MON-STALLED-TERMINAL",
    also: &[],
    name: "terminal_stall_is_last",
    applies: Some(Family::Monitor),
    check,
};

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    if scenario.config["stalled_is_terminal"] != true || scenario.config["layer"] == "kernel" {
        return Vec::new();
    }
    let Some(first) = capture.records.iter().position(|record| record["status"] == "stalled") else {
        return Vec::new();
    };
    capture.records[first + 1..].iter().map(|record| format!("a result after a terminal stall: {record}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_recovery_after_a_terminal_stall_is_caught() {
        let text =
            "title = \"t\"\nkind = \"monitor.readiness\"\n[config]\nstalled_is_terminal = true\n[[step]]\nat_ms = 0\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let capture = LifecycleCapture {
            records: vec![json!({ "status": "stalled" }), json!({ "status": "ready" })],
            ..Default::default()
        };
        assert_eq!(check(&scenario, &capture).len(), 1);
    }
}
