//! Plays reply steps over an in-process channel: the same bytes as HTTP, on Tokio's clock.

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::dialect::Step;

/// What the consumer of an in-process reply receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// Body bytes.
    Data(Bytes),
    /// The connection dropped mid-body; nothing follows.
    Abort,
}

/// Spawns a task that sends `steps` in order: bytes as [`Chunk::Data`], pauses as
/// `tokio::time::sleep` (free on a paused clock), [`Step::Abort`] as [`Chunk::Abort`] then stop.
/// The channel holds one chunk, so a stalled consumer backpressures; the task stops silently
/// when the receiver is dropped. The channel closing without `Abort` is a clean end of body.
/// Must be called within a Tokio runtime (any flavor).
pub fn play(steps: Vec<Step>) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        for step in steps {
            let chunk = match step {
                Step::Bytes(bytes) => Chunk::Data(bytes),
                Step::Pause(duration) => {
                    tokio::select! {
                        () = tokio::time::sleep(duration) => continue,
                        () = tx.closed() => return,
                    }
                }
                Step::Abort => Chunk::Abort,
            };
            let abort = chunk == Chunk::Abort;
            if tx.send(chunk).await.is_err() || abort {
                return;
            }
        }
    });
    rx
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn long_pause_is_free_and_bytes_are_the_steps() {
        let steps = vec![
            Step::Bytes(Bytes::from_static(b"event: a\n")),
            Step::Pause(Duration::from_secs(600)),
            Step::Bytes(Bytes::from_static(b"data: {}\n\n")),
        ];
        let started = std::time::Instant::now();
        let mut rx = play(steps);
        let mut bytes = Vec::new();
        while let Some(chunk) = rx.recv().await {
            match chunk {
                Chunk::Data(b) => bytes.extend_from_slice(&b),
                Chunk::Abort => panic!("unexpected abort"),
            }
        }
        assert_eq!(bytes, b"event: a\ndata: {}\n\n");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn abort_ends_the_stream_and_dropping_stops_the_task() {
        let mut rx = play(vec![Step::Bytes(Bytes::from_static(b"x")), Step::Abort, Step::Bytes(Bytes::new())]);
        assert_eq!(rx.recv().await, Some(Chunk::Data(Bytes::from_static(b"x"))));
        assert_eq!(rx.recv().await, Some(Chunk::Abort));
        assert_eq!(rx.recv().await, None);

        let rx = play(vec![Step::Pause(Duration::from_secs(3600)), Step::Bytes(Bytes::new())]);
        drop(rx);
        tokio::task::yield_now().await;
    }
}
