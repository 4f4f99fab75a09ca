//! BRIDGE-OBSERVER-NO-DUPLICATE-PANEL: a global observer sync never recreates the panel of a
//! turn marked as Telegram-origin once that turn has a Telegram-input panel (seed 003: "A global
//! observer sync must not recreate a second panel/New run for the same marked turn if a
//! Telegram-origin panel already exists").
//!
//! Judged on each global-observer `panel_sync` of a marked turn whose thread already has a
//! `telegram_input` panel (in the config's `panels` or a `panel` record of an earlier step):
//! the step sends no new status card, and its `panel` record is that panel, still Telegram's.

use std::collections::BTreeMap;

use serde_json::Value;

use super::readings::{Invariant, panel_syncs};
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-OBSERVER-NO-DUPLICATE-PANEL",
    also: &[],
    name: "panel_not_recreated",
    applies: Some(Family::Bridge),
    check,
};

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    // The latest panel of each thread, as the config gives it and each sync leaves it.
    let mut panels: BTreeMap<String, Value> = scenario.config["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|panel| Some((panel["thread_id"].as_str()?.to_owned(), panel.clone())))
        .collect();
    let mut messages = Vec::new();
    for sync in panel_syncs(scenario, capture) {
        let thread = sync.sync["thread_id"].as_str().unwrap_or_default();
        let telegram_panel = panels.get(thread).filter(|panel| {
            panel["source_mode"] == "telegram_input" && panel["current_turn_id"] == sync.sync["turn_id"]
        });
        if let Some(before) = telegram_panel.filter(|_| sync.marked && sync.sync["source"] == "global_observer") {
            let step = sync.step;
            for record in &sync.records {
                if record["record"] == "message" && record["kind"] == "status_card" && record["delivery"] == "sent" {
                    messages.push(format!(
                        "step {step}: the observer sent a new status card for Telegram-origin turn {} whose panel {} exists: {record}",
                        sync.sync["turn_id"], before["id"]
                    ));
                }
            }
            let after = sync.records.iter().rev().find(|record| record["record"] == "panel");
            if let Some(after) =
                after.filter(|after| after["id"] != before["id"] || after["source_mode"] != "telegram_input")
            {
                messages.push(format!(
                    "step {step}: the Telegram-input panel {} of Telegram-origin turn {} was replaced by the observer's: {after}",
                    before["id"], sync.sync["turn_id"]
                ));
            }
        }
        if let Some(after) = sync.records.iter().rev().find(|record| record["record"] == "panel") {
            panels.insert(thread.to_owned(), (*after).clone());
        }
    }
    messages
}
