//! How a presenter controls a Turn and hears how it ended: a [`CancelHandle`] in, a
//! [`TurnOutcome`] out. Below both the Turn loop and the delegation layer, which runs child
//! Turns with the same two types (TURN-CANCEL-EVIDENCE).

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::event::{ErrorKind, TerminalStatus};

/// How a Turn ended, as the runtime reports it to a presenter.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// The terminal state; the Log holds the evidence for it.
    pub status: TerminalStatus,
    /// The cause, for every state but `completed`.
    pub error_kind: Option<ErrorKind>,
    /// A human-readable message for failures.
    pub message: Option<String>,
    /// What the operator can do next.
    pub next_actions: Vec<String>,
    /// `incomplete_details.reason` when the Provider stopped early but cleanly (e.g. `max_output_tokens`).
    pub truncation: Option<String>,
}

/// The sending half of a cancellation: the presenter keeps it while a Turn runs.
#[derive(Debug)]
pub struct CancelHandle(watch::Sender<bool>);

impl CancelHandle {
    /// Asks the Turn to stop; it ends `interrupted` unless it already finished.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
}

/// The receiving half of a cancellation, polled by the Turn whenever it waits.
#[derive(Debug, Clone)]
pub struct CancelSignal(Option<watch::Receiver<bool>>);

impl CancelSignal {
    /// A linked handle and signal.
    pub fn pair() -> (CancelHandle, CancelSignal) {
        let (sender, receiver) = watch::channel(false);
        (CancelHandle(sender), CancelSignal(Some(receiver)))
    }

    /// A signal that never fires.
    pub fn never() -> CancelSignal {
        CancelSignal(None)
    }

    /// Resolves once cancellation is requested; never, if it cannot be.
    pub async fn cancelled(&mut self) {
        if let Some(receiver) = &mut self.0
            && receiver.wait_for(|cancelled| *cancelled).await.is_ok()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

/// The longest wait the runtime keeps: a century. A budget or timeout from input (a scenario,
/// a model's tool arguments) may be anything up to `u64::MAX` milliseconds, which no clock can
/// hold; a longer one means this.
pub const LONGEST_WAIT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The moment `wait` from now, a wait longer than [`LONGEST_WAIT`] cut to it, so a deadline
/// from input never overflows the clock.
pub fn deadline_after(wait: Duration) -> Instant {
    Instant::now() + wait.min(LONGEST_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deadline_from_any_input_exists() {
        let now = Instant::now();
        assert_eq!(deadline_after(Duration::from_millis(u64::MAX)), now + LONGEST_WAIT);
        assert_eq!(deadline_after(Duration::from_millis(5)), now + Duration::from_millis(5));
    }
}
