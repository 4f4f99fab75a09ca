//! BRIDGE-OBSERVER-NO-USER-NOTICE: a `[User]` notice repeats a prompt typed outside Telegram, so
//! no sync sends one for a turn Telegram input started (codex-tg
//! `TestMarkedTelegramOriginTurnDoesNotDuplicateUserRequestNoticeOnObserverResync`, and the
//! Telegram-input sync's "one Working card without a user duplicate").
//!
//! Judged on each `panel_sync` that is a Telegram-input sync or concerns a turn the config marks
//! as Telegram-origin: it sends no `user_notice` message, and its `panel` record keeps no
//! notice fingerprint of that turn's prompt.

use super::{Invariant, panel_syncs};
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-OBSERVER-NO-USER-NOTICE",
    name: "no_user_notice_for_telegram_turns",
    family: Some(Family::Bridge),
    check,
};

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let mut messages = Vec::new();
    for sync in panel_syncs(scenario, capture) {
        if !sync.marked && sync.sync["source"] != "telegram_input" {
            continue;
        }
        let prompt = &sync.sync["user_message_fp"];
        for record in &sync.records {
            let notice = record["record"] == "message" && record["kind"] == "user_notice";
            let remembered = record["record"] == "panel"
                && prompt.as_str().is_some_and(|fp| !fp.is_empty())
                && record["last_user_notice_fp"] == *prompt;
            if notice || remembered {
                messages.push(format!(
                    "step {}: a [User] notice repeated the prompt of turn {}, which Telegram input started: {record}",
                    sync.step, sync.sync["turn_id"]
                ));
            }
        }
    }
    messages
}
