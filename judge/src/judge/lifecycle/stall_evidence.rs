//! MON-STALL-TIMER: `stalled` comes only after unknown lasted the whole stall timeout: a stalled
//! record says how long unknown lasted, and that is at least `stall_timeout_ms`.

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant =
    Invariant { id: "MON-STALL-TIMER", also: &[], name: "stall_evidence", applies: Some(Family::Monitor), check };

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let timeout = scenario.config["stall_timeout_ms"].as_u64().unwrap_or(0);
    let field = if scenario.config["layer"] == "kernel" { "unknown_elapsed_ms" } else { "elapsed_unknown_ms" };
    super::readings::results(capture, "stalled")
        .filter_map(|record| match record[field].as_u64() {
            Some(elapsed) if elapsed >= timeout => None,
            Some(elapsed) => Some(format!(
                "stalled after {elapsed} ms of unknown, before the stall timeout of {timeout} ms: {record}"
            )),
            None => Some(format!("a stalled record without `{field}`: {record}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn an_early_or_unexplained_stall_is_caught() {
        let text =
            "title = \"t\"\nkind = \"monitor.readiness\"\n[config]\nstall_timeout_ms = 5000\n[[step]]\nat_ms = 0\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let stalled = |elapsed: serde_json::Value| json!({ "status": "stalled", "elapsed_unknown_ms": elapsed });
        let capture = LifecycleCapture {
            records: vec![stalled(json!(5000)), stalled(json!(4999)), json!({ "status": "stalled" })],
            ..Default::default()
        };
        let messages = check(&scenario, &capture);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].contains("after 4999 ms"));
    }
}
