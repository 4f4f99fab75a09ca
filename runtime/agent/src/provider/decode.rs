//! The seam every dialect's decoder plugs into, below the dialect modules: SSE framing is
//! common to every dialect, each reads its own frames.

use super::{Delta, ProviderFailure, Reply, sse};

/// Decodes one response body: SSE framing is common to every dialect ([`Decode::push`]); a
/// dialect reads its frames ([`Decode::on_frame`]).
pub trait Decode: Send {
    /// The SSE framing state of this body.
    fn sse(&mut self) -> &mut sse::Decoder;

    /// Reads one frame; `Ok(Some)` at the dialect's terminal marker, `Err` at a failure.
    fn on_frame(
        &mut self,
        frame: sse::Frame,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Option<Reply>, ProviderFailure>;

    /// The failure of a body that ended before the terminal marker: every dialect's is the
    /// same, told apart only by whether a frame was left half read.
    fn eof(&mut self) -> ProviderFailure {
        ProviderFailure::unterminated(self.sse().has_pending())
    }

    /// Feeds a chunk: each frame it completes, until the terminal marker or a failure.
    fn push(
        &mut self,
        chunk: &[u8],
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Option<Reply>, ProviderFailure> {
        for frame in self.sse().push(chunk) {
            if let Some(reply) = self.on_frame(frame, on_delta)? {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }
}
