//! Plays reply steps over an in-process channel: the same bytes as HTTP, on Tokio's clock.
//!
//! [`Playback`] is how a transport consumes a reply: the chunks of [`play`], with the end of
//! the body (finished, scripted disconnect, or dropped by the client) noted in the journal.

use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::dialect::Step;
use crate::journal::StreamEnd;
use crate::provider::{EndRecorder, MockReply};

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

/// A reply's body as a transport consumes it. It notes how the body ended when the last chunk
/// has been taken ([`StreamEnd::Finished`]), at a scripted abort ([`StreamEnd::Disconnected`]),
/// or when it is dropped before either ([`StreamEnd::ClientClosed`]): a transport drops it as
/// soon as its client is gone, which is what ACP-CANCEL-CLOSES-REQUEST measures.
#[derive(Debug)]
pub struct Playback {
    chunks: mpsc::Receiver<Chunk>,
    end: Option<EndRecorder>,
}

impl Playback {
    /// Starts playing `reply`'s steps (see [`play`]); must be called within a Tokio runtime.
    pub fn start(reply: MockReply) -> Playback {
        Playback { chunks: play(reply.steps), end: reply.end }
    }

    /// The next chunk; `None` at the end of the body.
    pub async fn recv(&mut self) -> Option<Chunk> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next chunk; `Ready(None)` at the end of the body.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        let polled = self.chunks.poll_recv(cx);
        let ended = match &polled {
            Poll::Ready(None) => Some(StreamEnd::Finished),
            Poll::Ready(Some(Chunk::Abort)) => Some(StreamEnd::Disconnected),
            Poll::Ready(Some(Chunk::Data(_))) | Poll::Pending => None,
        };
        if let Some(how) = ended
            && let Some(end) = self.end.take()
        {
            end.record(how);
        }
        polled
    }
}

impl Drop for Playback {
    fn drop(&mut self) {
        if let Some(end) = self.end.take() {
            end.record(StreamEnd::ClientClosed);
        }
    }
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

    #[tokio::test(start_paused = true)]
    async fn playback_notes_how_and_when_each_body_ended() {
        use crate::journal::{Ended, StreamEnd};
        use crate::provider::{MockProvider, MockRequest};
        use crate::script::{Ending, Pause, Response, Script};

        let held =
            Response { text: vec!["a".into()], pause: vec![Pause { after: 1, ms: 3_600_000 }], ..Response::default() };
        let dropped = Response { text: vec!["b".into()], then: Ending::Disconnect, ..Response::default() };
        let provider = MockProvider::new(Script::root(vec![held, Response::default(), dropped]));
        let request = || MockRequest {
            method: "POST".into(),
            path: "/v1/responses".into(),
            headers: Vec::new(),
            body: Bytes::from_static(b"{}"),
        };
        let ended = |provider: &MockProvider, idx: usize| provider.report().journal[idx].timing.ended;

        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(provider.idle_for(), Some(Duration::from_millis(10)), "idle since it started");
        let mut held = Playback::start(provider.respond(request()));
        assert!(matches!(held.recv().await, Some(Chunk::Data(_))));
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(ended(&provider, 0), None, "a held body is still open");
        assert_eq!(provider.idle_for(), None, "not idle while a body is open");
        drop(held);
        let closed = Some(Ended { at: Duration::from_millis(260), how: StreamEnd::ClientClosed });
        assert_eq!(ended(&provider, 0), closed);
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(provider.idle_for(), Some(Duration::from_millis(40)), "idle since the body ended");
        assert_eq!(provider.report().journal[0].timing.received, Duration::from_millis(10));

        let mut clean = Playback::start(provider.respond(request()));
        while clean.recv().await.is_some() {}
        drop(clean);
        assert_eq!(ended(&provider, 1).map(|ended| ended.how), Some(StreamEnd::Finished));

        let mut cut = Playback::start(provider.respond(request()));
        while !matches!(cut.recv().await, Some(Chunk::Abort) | None) {}
        drop(cut);
        assert_eq!(ended(&provider, 2).map(|ended| ended.how), Some(StreamEnd::Disconnected));
        assert!(provider.report().is_strictly_satisfied());
    }
}
