//! What the lifecycle rules share, below them and their list: the rule type and the readings
//! of a capture more than one rule makes.

use serde_json::Value;

use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// One contract rule over lifecycle records: judged on the scenarios of its family (`None`,
/// every family).
pub type Invariant = crate::rule::Invariant<fn(&LifecycleScenario, &LifecycleCapture) -> Vec<String>, Option<Family>>;

/// Records of the monitor layer that are results of `status`.
pub(crate) fn results<'a>(capture: &'a LifecycleCapture, status: &'a str) -> impl Iterator<Item = &'a Value> {
    capture.records.iter().filter(move |record| record["status"] == status)
}

/// One `panel_sync` step of a bridge scenario: its arguments, whether the config marks its turn
/// as Telegram-origin, and the records the step produced.
pub(crate) struct PanelSync<'a> {
    /// The step's index.
    pub step: usize,
    /// `do.panel_sync`.
    pub sync: &'a Value,
    /// The turn is in the config's `telegram_origin`.
    pub marked: bool,
    /// The step's records, in order.
    pub records: Vec<&'a Value>,
}

/// Every `panel_sync` step, in order.
pub(crate) fn panel_syncs<'a>(
    scenario: &'a LifecycleScenario,
    capture: &'a LifecycleCapture,
) -> impl Iterator<Item = PanelSync<'a>> {
    let marks = scenario.config["telegram_origin"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    scenario.steps.iter().enumerate().filter_map(move |(step, line)| {
        let sync = line["do"].get("panel_sync")?;
        let marked =
            marks.iter().any(|mark| mark["thread_id"] == sync["thread_id"] && mark["turn_id"] == sync["turn_id"]);
        let records = capture.records.iter().filter(|record| record["step"].as_u64() == Some(step as u64)).collect();
        Some(PanelSync { step, sync, marked, records })
    })
}
