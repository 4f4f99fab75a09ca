//! Stopping gauntlet stops everything: once SIGINT or SIGTERM arrives, every scenario in play
//! abandons its agent (its process group killed, its containment ended, its scratch folders
//! removed as the play returns), no scenario starts, and the command writes what finished, the
//! rest marked interrupted, then exits 130 or 143 (issue 40 item 5).
//!
//! The signals are heard on a thread of their own ([`listen`]); a play hears of the stop
//! through [`stopped`], a loop through [`requested`]. A second signal exits at once.

use std::sync::OnceLock;

use tokio::sync::Notify;

/// Which signal stopped gauntlet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (a CI runner cancelling the job).
    Terminate,
}

impl Stop {
    /// The exit code a shell gives a process this signal ended: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        })
    }
}

/// A stop, once requested, and who waits for it.
#[derive(Debug)]
pub struct Stops {
    stop: OnceLock<Stop>,
    notify: Notify,
}

impl Stops {
    /// No stop yet.
    pub const fn new() -> Stops {
        Stops { stop: OnceLock::new(), notify: Notify::const_new() }
    }

    /// Requests `stop` (the first request wins) and wakes every waiter.
    pub fn request(&self, stop: Stop) {
        let _ = self.stop.set(stop);
        self.notify.notify_waiters();
    }

    /// The stop requested, if any.
    pub fn requested(&self) -> Option<Stop> {
        self.stop.get().copied()
    }

    /// Resolves once a stop is requested (at once if it was).
    pub async fn stopped(&self) -> Stop {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a request between the two is not missed.
            notified.as_mut().enable();
            if let Some(stop) = self.requested() {
                return stop;
            }
            notified.await;
        }
    }
}

impl Default for Stops {
    fn default() -> Self {
        Stops::new()
    }
}

/// This process's stops.
static STOPS: Stops = Stops::new();

/// The stop requested of this process, if any.
pub fn requested() -> Option<Stop> {
    STOPS.requested()
}

/// Resolves once this process is asked to stop.
pub async fn stopped() -> Stop {
    STOPS.stopped().await
}

/// Hears SIGINT and SIGTERM from now on, on a thread of its own: the first requests the stop,
/// a second exits at once. Called once a command has moved into its namespaces (a thread
/// stays where it was started).
pub fn listen() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Registered here, before any scenario starts, so no signal between now and the thread's
    // first poll is lost (tokio keeps it for the stream).
    let (mut interrupt, mut terminate) = runtime.block_on(async {
        Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?))
    })?;
    std::thread::Builder::new().name("signals".to_owned()).spawn(move || {
        runtime.block_on(async {
            loop {
                let stop = tokio::select! {
                    _ = interrupt.recv() => Stop::Interrupt,
                    _ = terminate.recv() => Stop::Terminate,
                };
                if STOPS.requested().is_some() {
                    std::process::exit(i32::from(stop.exit_code()));
                }
                eprintln!("gauntlet: {stop}: stopping every agent, then writing what finished");
                STOPS.request(stop);
            }
        });
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter hears a stop requested after it began to wait, and one begun after it.
    #[tokio::test]
    async fn a_stop_wakes_every_waiter_before_and_after() {
        let stops = std::sync::Arc::new(Stops::new());
        assert_eq!(stops.requested(), None);
        let waiting = tokio::spawn({
            let stops = stops.clone();
            async move { stops.stopped().await }
        });
        tokio::task::yield_now().await;
        stops.request(Stop::Terminate);
        stops.request(Stop::Interrupt);
        assert_eq!(waiting.await.ok(), Some(Stop::Terminate));
        assert_eq!(stops.stopped().await, Stop::Terminate);
        assert_eq!((Stop::Interrupt.exit_code(), Stop::Terminate.exit_code()), (130, 143));
    }
}
