//! The observer pipeline shared by `pollTracked` and `refreshThreadForOperation` (part B.2.7, "Effect of defer").
//!
//! Normalize, merge with the stored row, pass the terminal gate, and only then store: a deferred
//! `interrupted` snapshot leaves the stored row and snapshot untouched except for the hot-poll time.

use serde_json::Value;

use super::interrupted::{self, GateAction, GateDecision, GateReason, TurnRef};
use super::merge::ThreadRow;
use super::snapshot::{self, DiffEvent};
use super::{Body, Bridge, Log, LogEvent, ThreadRecord, reason_text};

/// When a thread that is neither active nor waiting is polled again.
pub const IDLE_POLL_MS: u64 = 30_000;

/// What one pass of the pipeline did.
pub struct Refreshed {
    /// The gate's decision; `None` for a nil read.
    pub decision: Option<GateDecision>,
    /// Diagnostics, in order.
    pub logs: Vec<Log>,
    /// Turn lifecycle events against the previous stored state.
    pub events: Vec<DiffEvent>,
    /// The thread the operation goes on with: the merged row, or the stored row when deferred or nil.
    pub thread: Option<ThreadRow>,
}

impl Bridge {
    /// One observer poll of a `thread/read` result.
    pub(super) fn poll(&mut self, read: &Value, now_ms: u64) -> Vec<Body> {
        let refreshed = self.refresh(read, now_ms);
        let mut bodies: Vec<Body> = refreshed.decision.into_iter().map(Body::Gate).collect();
        bodies.extend(refreshed.logs.into_iter().map(Body::Log));
        bodies.extend(refreshed.events.into_iter().map(Body::Event));
        if let Some(thread) = &refreshed.thread {
            bodies.push(Body::Thread(ThreadRecord::of(thread)));
        }
        bodies.push(Body::Stored(Box::new(self.stored(now_ms))));
        bodies
    }

    /// Normalize, merge, gate and store one `thread/read` result; a nil result changes nothing.
    pub(super) fn refresh(&mut self, read: &Value, now_ms: u64) -> Refreshed {
        let mut refreshed =
            Refreshed { decision: None, logs: Vec::new(), events: Vec::new(), thread: self.thread.clone() };
        if read.is_null() {
            return refreshed;
        }
        let mut snapshot = snapshot::from_thread_read(read);
        let merged = self.merged(&snapshot);
        snapshot.thread_id.clone_from(&merged.id);
        snapshot.thread_status.clone_from(&merged.status);
        snapshot.active_turn_id.clone_from(&merged.active_turn_id);
        let decision = interrupted::decide(&mut self.markers, &snapshot, now_ms, self.observer_poll_ms);
        let turn = TurnRef { thread_id: snapshot.thread_id.clone(), turn_id: snapshot.latest_turn_id.clone() };
        let gate_log = |event| Log { reason: Some(reason_text(decision.reason)), ..Log::for_turn(event, &turn) };
        match (decision.action, decision.reason) {
            (GateAction::Defer, _) => refreshed.logs.push(gate_log(LogEvent::TelegramOriginTerminalDeferred)),
            (GateAction::Recover, _) => refreshed.logs.push(gate_log(LogEvent::TelegramOriginTerminalRecovered)),
            (GateAction::Accept, GateReason::GraceExpired) => {
                refreshed.logs.push(gate_log(LogEvent::TelegramOriginTerminalDeferExpired));
            }
            (GateAction::Accept, _) => {}
        }
        if decision.action == GateAction::Defer {
            self.snapshot_state.next_poll_after_ms = decision.next_poll_after_ms;
            refreshed.decision = Some(decision);
            return refreshed;
        }
        refreshed.events = snapshot::diff(&self.snapshot_state, &snapshot);
        let waiting = snapshot.waiting_on_approval || snapshot.waiting_on_reply;
        let next_poll_after_ms = match decision.next_poll_after_ms {
            Some(hot) if decision.hot_poll => hot,
            _ if merged.looks_active() || waiting => now_ms.saturating_add(self.observer_poll_ms),
            _ => now_ms.saturating_add(IDLE_POLL_MS),
        };
        self.snapshot_state = snapshot::compact(&snapshot, Some(next_poll_after_ms));
        refreshed.logs.extend(self.terminal_log(&snapshot));
        self.thread = Some(merged.clone());
        refreshed.thread = Some(merged);
        refreshed.decision = Some(decision);
        refreshed
    }
}
