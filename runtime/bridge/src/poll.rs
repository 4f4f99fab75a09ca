//! The observer pipeline shared by `pollTracked` and `refreshThreadForOperation` (part B.2.7, "Effect of defer").
//!
//! Normalize, merge with the stored row, pass the terminal gate, and only then store: a deferred
//! `interrupted` snapshot leaves the stored row and snapshot untouched except for the hot-poll time.

use serde_json::Value;

use crate::interrupted::{self, GateAction, GateDecision, GateReason, TurnRef};
use crate::merge::ThreadRow;
use crate::snapshot::{self, DiffEvent};
use crate::{Body, Bridge, Log, LogEvent, ThreadRecord, reason_text};

/// When a thread that is neither active nor waiting is polled again.
pub const IDLE_POLL_MS: u64 = 30_000;

/// What one pass of the pipeline did.
pub struct Refreshed {
    /// The gate's decision.
    pub decision: Option<GateDecision>,
    /// Diagnostics, in order.
    pub logs: Vec<Log>,
    /// Turn lifecycle events against the previous stored state.
    pub events: Vec<DiffEvent>,
    /// The thread the operation goes on with: the merged row, or the stored row when deferred.
    pub thread: Option<ThreadRow>,
}

/// Which upstream path runs the pipeline; they differ only in when the thread is polled next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `pollTracked`: a thread that is not busy is polled again after [`IDLE_POLL_MS`].
    Poll,
    /// `refreshThreadForOperation` (input, `/stop`): a thread that is not busy gets no poll time.
    Refresh,
}

impl Bridge {
    /// One observer poll of a `thread/read` result.
    pub(super) fn poll(&mut self, read: &Value, now_ms: u64) -> Vec<Body> {
        let refreshed = self.refresh(read, Operation::Poll, now_ms);
        let mut bodies: Vec<Body> = refreshed.decision.into_iter().map(Body::Gate).collect();
        bodies.extend(refreshed.logs.into_iter().map(Body::Log));
        bodies.extend(refreshed.events.into_iter().map(Body::Event));
        if let Some(thread) = &refreshed.thread {
            bodies.push(Body::Thread(ThreadRecord::of(thread)));
        }
        bodies.push(Body::Stored(Box::new(self.stored(now_ms))));
        bodies
    }

    /// Normalize, merge, gate and store one `thread/read` result.
    ///
    /// A nil result is not skipped: codex-tg's `SnapshotFromThreadRead` turns it into an empty
    /// snapshot, which the merge fills from the stored row and the store then writes (so a nil
    /// read clears the stored turn, and names the project `Shared/General`).
    pub(super) fn refresh(&mut self, read: &Value, operation: Operation, now_ms: u64) -> Refreshed {
        let mut refreshed =
            Refreshed { decision: None, logs: Vec::new(), events: Vec::new(), thread: self.thread.clone() };
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
            // `applyTerminalGateHotPolling`: only a stored snapshot gets the hot-poll time.
            if let Some(state) = &mut self.snapshot_state {
                state.next_poll_after_ms = decision.next_poll_after_ms;
            }
            refreshed.decision = Some(decision);
            return refreshed;
        }
        refreshed.events = snapshot::diff(self.snapshot_state.as_ref(), &snapshot);
        let busy =
            snapshot.latest_turn_status == "inProgress" || snapshot.waiting_on_approval || snapshot.waiting_on_reply;
        let next_poll_after_ms = match operation {
            _ if busy => Some(now_ms.saturating_add(self.observer_poll_ms)),
            Operation::Poll => Some(now_ms.saturating_add(IDLE_POLL_MS)),
            Operation::Refresh => None,
        };
        self.snapshot_state = Some(snapshot::compact(self.snapshot_state.as_ref(), &snapshot, next_poll_after_ms));
        refreshed.logs.extend(self.terminal_log(&snapshot));
        self.thread = Some(merged.clone());
        refreshed.thread = Some(merged);
        refreshed.decision = Some(decision);
        refreshed
    }
}
