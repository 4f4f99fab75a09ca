//! MON-TIMER-ORDER: in every lifecycle family, a record is emitted during the step that reaches its time: never later
//! than its step's `at_ms`, and never at or before the previous step's unless it is the step's
//! own observation (a timer due at a step's time fires in that step, before its observation).

use super::readings::Invariant;
use crate::lifecycle::LifecycleScenario;
use crate::lifecycle::capture::LifecycleCapture;

/// The rule.
pub const INVARIANT: Invariant =
    Invariant { id: "MON-TIMER-ORDER", also: &[], name: "records_in_time", applies: None, check };

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let mut messages = Vec::new();
    for record in &capture.records {
        let (Some(step), Some(at_ms)) = (record["step"].as_u64(), record["at_ms"].as_u64()) else { continue };
        let Ok(step) = usize::try_from(step) else { continue };
        let Some(step_at) = scenario.at_ms(step) else { continue };
        let previous_at = step.checked_sub(1).and_then(|previous| scenario.at_ms(previous));
        let too_late = at_ms > step_at;
        let too_early = at_ms != step_at && previous_at.is_some_and(|previous_at| at_ms <= previous_at);
        if too_late || too_early {
            messages.push(format!(
                "a record at {at_ms} ms came out of step {step}, which covers {} to {step_at} ms: {record}",
                previous_at.map_or_else(|| "the start".to_owned(), |at| format!("after {at}")),
            ));
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_timer_reported_in_the_wrong_step_is_caught() {
        let text = "title = \"t\"\nkind = \"monitor.readiness\"\n[[step]]\nat_ms = 0\n[[step]]\nat_ms = 4900\n[[step]]\nat_ms = 5000\n";
        let scenario = crate::lifecycle::parse(text, Path::new("x.toml")).unwrap();
        let record = |step: usize, at_ms: u64| json!({ "step": step, "at_ms": at_ms, "status": "stalled" });
        let fine = LifecycleCapture { records: vec![record(2, 5000)], ..Default::default() };
        assert!(check(&scenario, &fine).is_empty());
        let early = LifecycleCapture { records: vec![record(1, 5000)], ..Default::default() };
        assert_eq!(check(&scenario, &early).len(), 1);
        let late = LifecycleCapture { records: vec![record(2, 4000)], ..Default::default() };
        assert!(check(&scenario, &late)[0].contains("which covers after 4900 to 5000 ms"));
    }
}
