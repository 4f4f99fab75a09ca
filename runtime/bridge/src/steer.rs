//! Operator input: steer the active turn, fall back to `turn/start`, or refuse a parallel turn
//! (ADR-012 "Decisions", part B.2.6); and `/stop`.
//!
//! A `turn/steer` error that says there is no active turn is stale-active evidence and may fall
//! through to `turn/start`; an error that says the turn is active, in flight or not steerable blocks it.

use serde::Serialize;

use crate::interrupted::TurnRef;
use crate::merge::ThreadRow;
use crate::poll::Operation;
use crate::snapshot::{self, Snapshot};
use crate::status::is_terminal;
use crate::{Body, Bridge, Input, Stop};

/// The refusal when the live session is down.
pub const NOT_READY_TEXT: &str = "Live app-server session is not ready yet. Try /status or /repair.";

/// The `/stop` answer for a thread with nothing running.
pub const ALREADY_IDLE_TEXT: &str = "Thread is already idle.";

/// What operator input or `/stop` came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `turn/steer` accepted the text.
    Steered,
    /// A new turn was started.
    Started,
    /// The thread is active and the text was refused rather than starting a parallel turn.
    Blocked,
    /// The bridge knows no such thread.
    UnknownThread,
    /// The live session is not connected.
    NotReady,
    /// `/stop` found nothing running.
    AlreadyIdle,
    /// `/stop` sent `turn/interrupt`.
    InterruptRequested,
}

/// The `decision` record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// What happened.
    pub outcome: Outcome,
    /// The text shown to the operator (`""` where upstream shows only a panel).
    pub reply: String,
    /// The turn that took the input, or the one `/stop` interrupted.
    pub turn_id: String,
    /// App-server calls in order: `thread/resume <thread>`, `thread/read <thread>`, `turn/steer <turn>`,
    /// `turn/start <thread>`, `turn/interrupt <turn>`. The list is evidence for the golden; scenarios
    /// state only the calls a requirement names (a `turn/steer`, no `turn/start`).
    pub calls: Vec<String>,
    /// The last `turn/steer` error, or `""`.
    pub steer_error: String,
    /// Whether the one-shot default collaboration-mode override was set (`/stop` always sets it).
    pub default_mode_override: bool,
}

/// `steerFailureMeansNoActiveTurn`.
pub fn means_no_active_turn(error: &str) -> bool {
    let lowered = error.to_lowercase();
    ["no active turn", "no active run", "turn is not active"].iter().any(|needle| lowered.contains(needle))
}

/// `steerFailureImpliesActive`: never true for a no-active-turn error.
pub fn implies_active(error: &str) -> bool {
    if means_no_active_turn(error) {
        return false;
    }
    let lowered = error.to_lowercase();
    ["active turn", "activeturn", "already active", "in-flight", "not steerable"]
        .iter()
        .any(|needle| lowered.contains(needle))
}

/// The turn an "expected active turn id … but found …" error names: the last UUID in the message.
pub fn mismatch_found_turn(error: &str) -> Option<String> {
    let lowered = error.to_lowercase();
    if !lowered.contains("expected active turn id") || !lowered.contains("found") {
        return None;
    }
    last_uuid(error)
}

fn last_uuid(text: &str) -> Option<String> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let is_uuid_at = |start: usize| {
        let mut idx = start;
        for (group_idx, len) in GROUPS.iter().enumerate() {
            if group_idx > 0 {
                if bytes.get(idx) != Some(&b'-') {
                    return false;
                }
                idx += 1;
            }
            for _ in 0..*len {
                if !bytes.get(idx).is_some_and(u8::is_ascii_hexdigit) {
                    return false;
                }
                idx += 1;
            }
        }
        true
    };
    (0..bytes.len())
        .rev()
        .find(|start| is_uuid_at(*start))
        .and_then(|start| text.get(start..start + 36))
        .map(str::to_owned)
}

/// `activeThreadReplyText`: the refusal that promises no parallel turn was started.
pub fn active_thread_reply(label: &str, turn_id: &str, error: Option<&str>) -> String {
    match (error, turn_id.is_empty()) {
        (Some(error), false) => format!(
            "{label} is already active, but Codex did not accept input for active turn {turn_id}: {error}. I did not start a parallel turn."
        ),
        (Some(error), true) => {
            format!(
                "{label} is already active, but Codex did not accept input: {error}. I did not start a parallel turn."
            )
        }
        (None, false) => format!(
            "{label} is already active. Reply to the current live turn card to steer turn {turn_id}, or wait for completion. I did not start a parallel turn."
        ),
        (None, true) => format!(
            "{label} is already active, but the active turn id is not available yet. Wait for completion or use /stop. I did not start a parallel turn."
        ),
    }
}

impl Bridge {
    fn decision(outcome: Outcome, reply: String, calls: Vec<String>) -> Decision {
        Decision {
            outcome,
            reply,
            turn_id: String::new(),
            calls,
            steer_error: String::new(),
            default_mode_override: false,
        }
    }

    /// The stored thread `thread_id` names (`""` is the stored thread), or the refusal.
    fn target(&self, thread_id: &str) -> Result<ThreadRow, Decision> {
        match &self.thread {
            Some(thread) if thread_id.is_empty() || thread.id == thread_id => {
                if self.sessions.live_connected {
                    Ok(thread.clone())
                } else {
                    Err(Bridge::decision(Outcome::NotReady, NOT_READY_TEXT.to_owned(), Vec::new()))
                }
            }
            _ => Err(Bridge::decision(Outcome::UnknownThread, format!("Unknown thread: {thread_id}"), Vec::new())),
        }
    }

    /// `refreshThreadForOperation` through the stub's `thread/read`.
    fn refresh_for_operation(&mut self, thread: &ThreadRow, calls: &mut Vec<String>, now_ms: u64) -> ThreadRow {
        calls.push(format!("thread/read {}", thread.id));
        let read = self.thread_read.clone();
        self.refresh(&read, Operation::Refresh, now_ms).thread.unwrap_or_else(|| thread.clone())
    }

    /// One `turn/steer`: the next queued error, else the standing error, else success.
    fn steer(&mut self, turn_id: &str, calls: &mut Vec<String>) -> Result<String, String> {
        calls.push(format!("turn/steer {turn_id}"));
        let error = self.steer_errors.pop_front().unwrap_or_else(|| self.steer_error.clone());
        if error.is_empty() { Ok(turn_id.to_owned()) } else { Err(error) }
    }

    /// `sendInputToThreadTurn`.
    pub(super) fn input(&mut self, input: &Input, now_ms: u64) -> Vec<Body> {
        let decision = match self.target(&input.thread_id) {
            Err(refusal) => refusal,
            Ok(stored) => self.send_input(stored, &input.route_turn_id, now_ms),
        };
        vec![Body::Decision(decision), Body::Stored(Box::new(self.stored(now_ms)))]
    }

    fn send_input(&mut self, stored: ThreadRow, route_turn_id: &str, now_ms: u64) -> Decision {
        let mut calls = vec![format!("thread/resume {}", stored.id)];
        let mut thread = self.refresh_for_operation(&stored, &mut calls, now_ms);
        let mut steered: Option<String> = None;
        let mut error: Option<String> = None;
        let mut attempted = String::new();
        let mut attempt = |bridge: &mut Bridge, turn_id: String, calls: &mut Vec<String>| {
            let result = bridge.steer(&turn_id, calls);
            attempted = turn_id;
            match result {
                Ok(turn_id) => (Some(turn_id), None),
                Err(message) => (None, Some(message)),
            }
        };
        if !self.armed_steer_turn_id.is_empty() {
            (steered, error) = attempt(self, self.armed_steer_turn_id.clone(), &mut calls);
            if steered.is_some() {
                self.armed_steer_turn_id.clear();
            }
        }
        if steered.is_none() && !route_turn_id.is_empty() {
            (steered, error) = attempt(self, route_turn_id.to_owned(), &mut calls);
        }
        if steered.is_none() && route_turn_id.is_empty() && thread.looks_active() && !thread.active_turn_id.is_empty() {
            (steered, error) = attempt(self, thread.active_turn_id.clone(), &mut calls);
        }
        if steered.is_none()
            && let Some(found) = error.as_deref().and_then(mismatch_found_turn)
        {
            thread.active_turn_id.clone_from(&found);
            "active".clone_into(&mut thread.status);
            (steered, error) = attempt(self, found, &mut calls);
        }
        let no_active = error.as_deref().is_some_and(means_no_active_turn);
        if steered.is_none() && no_active {
            thread = self.refresh_for_operation(&thread, &mut calls, now_ms);
        }
        let steer_error = error.clone().unwrap_or_default();
        let outcome = if let Some(turn_id) = steered {
            (Outcome::Steered, turn_id)
        } else if !no_active && (thread.looks_active() || error.as_deref().is_some_and(implies_active)) {
            let turn_id = if attempted.is_empty() { thread.active_turn_id.clone() } else { attempted };
            let reply = active_thread_reply(&thread.label(), &turn_id, error.as_deref());
            return Decision { steer_error, ..Bridge::decision(Outcome::Blocked, reply, calls) };
        } else {
            calls.push(format!("turn/start {}", thread.id));
            self.armed_steer_turn_id.clear();
            (Outcome::Started, self.started_turn_id.clone())
        };
        // Steered or started, codex-tg goes on the same way: mark the turn Telegram-origin, refresh
        // (`refresh_thread_after_start`) and seed a started-turn snapshot (`sendInputToThreadTurn`).
        let (outcome, turn_id) = outcome;
        self.markers.telegram_origin.insert(TurnRef { thread_id: thread.id.clone(), turn_id: turn_id.clone() });
        self.refresh_for_operation(&thread, &mut calls, now_ms);
        self.seed_started_turn(&thread, &turn_id, now_ms);
        Decision { turn_id, steer_error, ..Bridge::decision(outcome, String::new(), calls) }
    }

    /// `ensureStartedTurnSnapshot`: unless the stored snapshot already saw the turn, store the
    /// thread (as it was before the post-start refresh) as running that turn, and compact a
    /// running snapshot of it polled again after the observer interval.
    fn seed_started_turn(&mut self, thread: &ThreadRow, turn_id: &str, now_ms: u64) {
        if turn_id.is_empty() || self.snapshot_state.as_ref().is_some_and(|state| state.last_seen_turn_id == turn_id) {
            return;
        }
        let mut row = thread.clone();
        "inProgress".clone_into(&mut row.status);
        turn_id.clone_into(&mut row.active_turn_id);
        let started = Snapshot {
            thread_id: row.id.clone(),
            thread_status: row.status.clone(),
            active_turn_id: row.active_turn_id.clone(),
            latest_turn_id: turn_id.to_owned(),
            latest_turn_status: "inProgress".to_owned(),
            ..Snapshot::default()
        };
        let next_poll_after_ms = Some(now_ms.saturating_add(self.observer_poll_ms));
        self.snapshot_state = Some(snapshot::compact(self.snapshot_state.as_ref(), &started, next_poll_after_ms));
        self.thread = Some(row);
    }

    /// `interruptTurn`: idle unless something is really running; an interrupt is marked explicit.
    pub(super) fn stop(&mut self, stop: &Stop, now_ms: u64) -> Vec<Body> {
        let mut decision = match self.target(&stop.thread_id) {
            Err(refusal) => refusal,
            Ok(stored) => {
                let mut calls = vec![format!("thread/resume {}", stored.id)];
                let thread = self.refresh_for_operation(&stored, &mut calls, now_ms);
                let stored_turn_terminal =
                    self.snapshot_state.as_ref().is_some_and(|state| is_terminal(&state.last_seen_turn_status));
                let idle = stored_turn_terminal
                    || is_terminal(&thread.status)
                    || !thread.looks_active()
                    || thread.active_turn_id.is_empty();
                if idle {
                    Bridge::decision(Outcome::AlreadyIdle, ALREADY_IDLE_TEXT.to_owned(), calls)
                } else {
                    calls.push(format!("turn/interrupt {}", thread.active_turn_id));
                    let turn = TurnRef { thread_id: thread.id.clone(), turn_id: thread.active_turn_id.clone() };
                    self.markers.explicit_interrupt.insert(turn);
                    Decision {
                        turn_id: thread.active_turn_id.clone(),
                        ..Bridge::decision(Outcome::InterruptRequested, String::new(), calls)
                    }
                }
            }
        };
        decision.default_mode_override = matches!(decision.outcome, Outcome::AlreadyIdle | Outcome::InterruptRequested);
        vec![Body::Decision(decision), Body::Stored(Box::new(self.stored(now_ms)))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steer_errors_are_classified_as_upstream_verified() {
        let cases = [
            ("map[code:-32600 message:no active turn to steer]", true, false),
            ("turn already completed", false, false),
            ("active turn is not steerable", false, true),
            ("turn is in-flight", false, true),
            ("expected active turn id `a` but found `b`", false, true),
        ];
        for (message, no_active, active) in cases {
            assert_eq!((means_no_active_turn(message), implies_active(message)), (no_active, active), "{message}");
        }
    }

    #[test]
    fn a_mismatch_names_the_last_uuid() {
        let message = "map[code:-32600 message:expected active turn id `01900000-0000-7000-8000-000000000101` but found `01900000-0000-7000-8000-000000000102`]";
        assert_eq!(mismatch_found_turn(message).as_deref(), Some("01900000-0000-7000-8000-000000000102"));
        assert_eq!(mismatch_found_turn("no active turn to steer"), None);
    }

    #[test]
    fn refusals_promise_no_parallel_turn() {
        for (turn_id, error) in [("t", Some("e")), ("", Some("e")), ("t", None), ("", None)] {
            assert!(active_thread_reply("[p] x", turn_id, error).ends_with("I did not start a parallel turn."));
        }
        assert!(active_thread_reply("[p] x", "", None).contains("active turn id is not available"));
    }
}
