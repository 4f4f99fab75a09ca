//! BRIDGE-OBSERVER-NO-USER-NOTICE: a `[User]` notice repeats a prompt typed outside Telegram, so
//! no sync sends one for a turn Telegram input started (codex-tg
//! `TestMarkedTelegramOriginTurnDoesNotDuplicateUserRequestNoticeOnObserverResync`, and the
//! Telegram-input sync's "one Working card without a user duplicate").
//!
//! Judged on each `panel_sync` that is a Telegram-input sync or concerns a turn the config marks
//! as Telegram-origin: it sends no `user_notice` message (the fingerprint a panel keeps is the
//! implementation's own bookkeeping, which an earlier prompt typed elsewhere may share).

use super::readings::{Invariant, panel_syncs};
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-OBSERVER-NO-USER-NOTICE",
    also: &[],
    name: "no_user_notice_for_telegram_turns",
    applies: Some(Family::Bridge),
    check,
};

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let mut messages = Vec::new();
    for sync in panel_syncs(scenario, capture) {
        if !sync.marked && sync.sync["source"] != "telegram_input" {
            continue;
        }
        for record in &sync.records {
            if record["record"] == "message" && record["kind"] == "user_notice" {
                messages.push(format!(
                    "step {}: a [User] notice repeated the prompt of turn {}, which Telegram input started: {record}",
                    sync.step, sync.sync["turn_id"]
                ));
            }
        }
    }
    messages
}
