//! The deferred `interrupted` terminal gate (ADR-012 "Transient Interrupted Contract", part B.2.7).
//!
//! App Server can report a Telegram-origin turn `interrupted` and later recover it, so an implicit
//! `interrupted` is held for a grace window (fixed at first sighting) instead of being rendered
//! terminal; an explicit `/stop` bypasses the wait.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::snapshot::Snapshot;
use crate::status::looks_active;

/// The shortest grace window, whatever the poll interval.
pub const MINIMUM_GRACE_MS: u64 = 90_000;
/// How many poll intervals the grace window spans when that is longer than the minimum.
pub const GRACE_POLL_MULTIPLE: u64 = 12;
/// The hot-poll interval when the observer poll interval is zero.
pub const DEFAULT_HOT_POLL_MS: u64 = 5_000;

/// What the gate does with a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateAction {
    /// Process the snapshot normally (terminal if it is terminal).
    Accept,
    /// Keep the stored snapshot and poll again soon.
    Defer,
    /// A deferred turn showed life again: drop the defer marker and go on.
    Recover,
}

/// Why the gate decided what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateReason {
    /// The snapshot names no thread or no turn.
    MissingThreadOrTurn,
    /// Not an interrupted snapshot the gate may hold, and nothing was deferred.
    NotDeferrableInterrupted,
    /// A deferred turn is active, waiting, completed or otherwise not interrupted now.
    SnapshotRecovered,
    /// The operator stopped this turn.
    ExplicitInterrupt,
    /// The turn did not start from Telegram.
    NotTelegramOrigin,
    /// The grace window fixed at first sighting has passed.
    GraceExpired,
    /// Interrupted with nothing but the user's message.
    EmptyInterrupted,
    /// Interrupted with progress, tools or messages but no final answer.
    PartialInterrupted,
    /// Interrupted while carrying a final answer.
    FinalInterrupted,
}

/// A turn, as the key of the gate's markers.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct TurnRef {
    /// The thread id.
    pub thread_id: String,
    /// The turn id.
    pub turn_id: String,
}

/// The stored defer marker (upstream `terminalGateState`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateState {
    /// The first sighting.
    pub first_seen_at_ms: u64,
    /// The latest sighting.
    pub last_seen_at_ms: u64,
    /// `first_seen_at_ms + grace`; never moved by later sightings.
    pub expires_at_ms: u64,
    /// The hot-poll time set by the latest defer.
    pub next_poll_after_ms: Option<u64>,
    /// The hot-poll interval of the latest defer.
    pub hot_poll_interval_ms: u64,
    /// How many times the interrupted snapshot was seen.
    pub seen_count: u32,
    /// The latest decision.
    pub last_decision: GateAction,
    /// The latest reason.
    pub last_reason: GateReason,
}

/// The gate's markers: Telegram-origin turns, explicit interrupts and defer states.
#[derive(Clone, Debug, Default)]
pub struct Markers {
    /// Turns started from Telegram input.
    pub telegram_origin: BTreeSet<TurnRef>,
    /// Turns the operator stopped with `/stop` or the Stop button.
    pub explicit_interrupt: BTreeSet<TurnRef>,
    /// Defer markers by turn.
    pub deferred: BTreeMap<TurnRef, GateState>,
}

/// One decision (upstream `terminalGateDecision`), with the markers as they are afterwards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateDecision {
    /// accept, defer or recover.
    pub action: GateAction,
    /// Why.
    pub reason: GateReason,
    /// The snapshot's thread.
    pub thread_id: String,
    /// The snapshot's latest turn.
    pub turn_id: String,
    /// Interrupted with no meaningful signal.
    pub empty_interrupted: bool,
    /// Interrupted, identified and not waiting.
    pub deferrable_interrupted: bool,
    /// The turn carries an explicit interrupt marker.
    pub explicit_interrupt: bool,
    /// `max(90 s, 12 × poll)`.
    pub grace_ms: u64,
    /// From the defer marker, when there is one.
    pub first_seen_at_ms: Option<u64>,
    /// From the defer marker, when there is one.
    pub last_seen_at_ms: Option<u64>,
    /// From the defer marker, when there is one.
    pub expires_at_ms: Option<u64>,
    /// Whether to poll again after the hot-poll interval.
    pub hot_poll: bool,
    /// `now + hot poll` when `hot_poll`.
    pub next_poll_after_ms: Option<u64>,
    /// The defer marker after the decision; `None` when absent or cleared.
    pub defer_state: Option<GateState>,
    /// Whether a defer marker is set after the decision.
    pub defer_marked: bool,
    /// Whether the explicit-interrupt marker is still set after the decision.
    pub explicit_marked: bool,
}

/// The grace window for an observer poll interval.
pub fn grace_ms(observer_poll_ms: u64) -> u64 {
    MINIMUM_GRACE_MS.max(observer_poll_ms.saturating_mul(GRACE_POLL_MULTIPLE))
}

/// The hot-poll interval for an observer poll interval.
pub fn hot_poll_ms(observer_poll_ms: u64) -> u64 {
    if observer_poll_ms > 0 { observer_poll_ms } else { DEFAULT_HOT_POLL_MS }
}

/// An interrupted snapshot the gate may hold: identified and not waiting on anyone.
pub fn is_deferrable(snapshot: &Snapshot) -> bool {
    snapshot.latest_turn_status.eq_ignore_ascii_case("interrupted")
        && !snapshot.thread_id.is_empty()
        && !snapshot.latest_turn_id.is_empty()
        && !snapshot.waiting_on_approval
        && !snapshot.waiting_on_reply
}

/// `decideTelegramOriginEmptyInterruptedTerminal(snapshot, now)`; updates the defer markers.
pub fn decide(markers: &mut Markers, snapshot: &Snapshot, now_ms: u64, observer_poll_ms: u64) -> GateDecision {
    let key = TurnRef { thread_id: snapshot.thread_id.clone(), turn_id: snapshot.latest_turn_id.clone() };
    let deferrable = is_deferrable(snapshot);
    let empty = deferrable && !snapshot.has_meaningful_signal();
    let hot_poll_interval_ms = hot_poll_ms(observer_poll_ms);
    let mut decision = GateDecision::accepted(&key, deferrable, empty, markers, grace_ms(observer_poll_ms));
    if key.thread_id.is_empty() || key.turn_id.is_empty() {
        return decision.with_markers(markers, &key);
    }
    if !deferrable {
        if let Some(existing) = markers.deferred.remove(&key) {
            let decision = decision.recovered(snapshot, now_ms, hot_poll_interval_ms);
            // As upstream: first sighting and expiry from the cleared marker, last sighting now.
            let mut decision = decision.with_markers(markers, &key);
            decision.first_seen_at_ms = Some(existing.first_seen_at_ms);
            decision.last_seen_at_ms = Some(now_ms);
            decision.expires_at_ms = Some(existing.expires_at_ms);
            return decision;
        }
        decision.reason = GateReason::NotDeferrableInterrupted;
        return decision.with_markers(markers, &key);
    }
    if decision.explicit_interrupt {
        markers.deferred.remove(&key);
        decision.reason = GateReason::ExplicitInterrupt;
        return decision.with_markers(markers, &key);
    }
    if !markers.telegram_origin.contains(&key) {
        decision.reason = GateReason::NotTelegramOrigin;
        return decision.with_markers(markers, &key);
    }
    let reason = if empty {
        GateReason::EmptyInterrupted
    } else if snapshot.has_final_signal() {
        GateReason::FinalInterrupted
    } else {
        GateReason::PartialInterrupted
    };
    decision.defer_or_expire(markers, &key, reason, now_ms, hot_poll_interval_ms);
    decision.with_markers(markers, &key)
}

impl GateDecision {
    /// The decision before any rule applies: accept, for a missing thread or turn.
    fn accepted(key: &TurnRef, deferrable: bool, empty: bool, markers: &Markers, grace_ms: u64) -> GateDecision {
        GateDecision {
            action: GateAction::Accept,
            reason: GateReason::MissingThreadOrTurn,
            thread_id: key.thread_id.clone(),
            turn_id: key.turn_id.clone(),
            empty_interrupted: empty,
            deferrable_interrupted: deferrable,
            explicit_interrupt: markers.explicit_interrupt.contains(key),
            grace_ms,
            first_seen_at_ms: None,
            last_seen_at_ms: None,
            expires_at_ms: None,
            hot_poll: false,
            next_poll_after_ms: None,
            defer_state: None,
            defer_marked: false,
            explicit_marked: false,
        }
    }

    /// The decision with the markers of `key` as they are after it.
    fn with_markers(mut self, markers: &Markers, key: &TurnRef) -> GateDecision {
        self.defer_state = markers.deferred.get(key).cloned();
        self.defer_marked = self.defer_state.is_some();
        self.explicit_marked = markers.explicit_interrupt.contains(key);
        if let Some(state) = &self.defer_state {
            self.first_seen_at_ms = Some(state.first_seen_at_ms);
            self.last_seen_at_ms = Some(state.last_seen_at_ms);
            self.expires_at_ms = Some(state.expires_at_ms);
        }
        self
    }

    /// A deferred turn that is no longer interrupted: recover it, polling again soon while it
    /// still looks busy.
    fn recovered(mut self, snapshot: &Snapshot, now_ms: u64, hot_poll_interval_ms: u64) -> GateDecision {
        self.action = GateAction::Recover;
        self.reason = GateReason::SnapshotRecovered;
        self.hot_poll = looks_active(&snapshot.thread_status, &snapshot.active_turn_id)
            || snapshot.latest_turn_status == "inProgress"
            || snapshot.waiting_on_approval
            || snapshot.waiting_on_reply;
        if self.hot_poll {
            self.next_poll_after_ms = Some(now_ms.saturating_add(hot_poll_interval_ms));
        }
        self
    }

    /// Marks `key` deferred (first sighting starts its grace window) and defers it, or accepts
    /// it once its grace window has expired.
    fn defer_or_expire(
        &mut self,
        markers: &mut Markers,
        key: &TurnRef,
        reason: GateReason,
        now_ms: u64,
        hot_poll_interval_ms: u64,
    ) {
        let state = markers.deferred.entry(key.clone()).or_insert(GateState {
            first_seen_at_ms: now_ms,
            last_seen_at_ms: now_ms,
            expires_at_ms: now_ms.saturating_add(self.grace_ms),
            next_poll_after_ms: None,
            hot_poll_interval_ms,
            seen_count: 0,
            last_decision: GateAction::Defer,
            last_reason: reason,
        });
        state.last_seen_at_ms = now_ms;
        state.seen_count = state.seen_count.saturating_add(1);
        if now_ms >= state.expires_at_ms {
            state.last_decision = GateAction::Accept;
            state.last_reason = GateReason::GraceExpired;
            self.reason = GateReason::GraceExpired;
        } else {
            let next_poll_after_ms = now_ms.saturating_add(hot_poll_interval_ms);
            state.next_poll_after_ms = Some(next_poll_after_ms);
            state.hot_poll_interval_ms = hot_poll_interval_ms;
            state.last_decision = GateAction::Defer;
            state.last_reason = reason;
            self.action = GateAction::Defer;
            self.reason = reason;
            self.hot_poll = true;
            self.next_poll_after_ms = Some(next_poll_after_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::DetailKind;

    fn interrupted() -> Snapshot {
        Snapshot {
            thread_id: "thread-1".into(),
            thread_status: "idle".into(),
            latest_turn_id: "turn-1".into(),
            latest_turn_status: "interrupted".into(),
            detail_kinds: vec![DetailKind::User],
            ..Snapshot::default()
        }
    }

    fn marked() -> Markers {
        let mut markers = Markers::default();
        markers.telegram_origin.insert(TurnRef { thread_id: "thread-1".into(), turn_id: "turn-1".into() });
        markers
    }

    #[test]
    fn an_empty_interrupted_telegram_turn_is_deferred_with_hot_polling() {
        let mut markers = marked();
        let decision = decide(&mut markers, &interrupted(), 0, 10_000);
        assert_eq!((decision.action, decision.reason), (GateAction::Defer, GateReason::EmptyInterrupted));
        assert_eq!(
            (decision.grace_ms, decision.next_poll_after_ms, decision.expires_at_ms),
            (120_000, Some(10_000), Some(120_000))
        );
        assert_eq!(decision.defer_state.map(|state| state.seen_count), Some(1));
    }

    #[test]
    fn expiry_is_fixed_at_first_sighting() {
        let mut markers = marked();
        decide(&mut markers, &interrupted(), 0, 1_000);
        let decision = decide(&mut markers, &interrupted(), 89_999, 1_000);
        assert_eq!(decision.action, GateAction::Defer);
        let decision = decide(&mut markers, &interrupted(), 90_000, 1_000);
        assert_eq!((decision.action, decision.reason), (GateAction::Accept, GateReason::GraceExpired));
        assert_eq!(
            decision.defer_state.map(|state| (state.seen_count, state.last_decision)),
            Some((3, GateAction::Accept))
        );
    }

    #[test]
    fn recovery_clears_the_marker() {
        let mut markers = marked();
        decide(&mut markers, &interrupted(), 0, 5_000);
        let recovered =
            Snapshot { latest_turn_status: "inProgress".into(), thread_status: "active".into(), ..interrupted() };
        let decision = decide(&mut markers, &recovered, 15_000, 5_000);
        assert_eq!(
            (decision.action, decision.reason, decision.hot_poll),
            (GateAction::Recover, GateReason::SnapshotRecovered, true)
        );
        assert!(decision.defer_state.is_none());
    }

    #[test]
    fn explicit_stop_and_foreign_turns_are_accepted_at_once() {
        let mut markers = marked();
        markers.explicit_interrupt.insert(TurnRef { thread_id: "thread-1".into(), turn_id: "turn-1".into() });
        let decision = decide(&mut markers, &interrupted(), 0, 0);
        assert_eq!(
            (decision.action, decision.reason, decision.explicit_marked),
            (GateAction::Accept, GateReason::ExplicitInterrupt, true)
        );
        let decision = decide(&mut Markers::default(), &interrupted(), 0, 0);
        assert_eq!(decision.reason, GateReason::NotTelegramOrigin);
    }
}
