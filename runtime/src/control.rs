//! How a presenter controls a Turn and hears how it ended: a [`CancelHandle`] in, a
//! [`TurnOutcome`] out. Below both the Turn loop and the delegation layer, which runs child
//! Turns with the same two types (TURN-CANCEL-EVIDENCE).

use tokio::sync::watch;

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
