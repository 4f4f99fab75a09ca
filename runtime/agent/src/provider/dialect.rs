//! The wire formats the runtime speaks, and the seam every dialect plugs into: a request built
//! from a [`Call`], and a [`Decode`]r from stream bytes to [`Delta`]s and one [`Reply`] or
//! [`ProviderFailure`].
//!
//! Adding a dialect is one module beside `responses.rs` (`envelope`, `push_item`, `Decoder`,
//! `error_code`) and one arm in each `match` below and in `transcript.rs`. The runtime shares no code with the mock's encoders, so
//! each checks the other.

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use serde_json::Value;

use super::transcript::Transcript;
use super::{Call, Delta, ProviderFailure, Reply, anthropic_messages, chat_completions, gemini, responses, sse};

/// A Provider wire format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The OpenAI Responses API: `POST /v1/responses`.
    #[default]
    Responses,
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    ChatCompletions,
    /// Anthropic Messages: `POST /v1/messages`.
    AnthropicMessages,
    /// Gemini: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`.
    Gemini,
}

/// The request of one attempt: path (after the base URL), headers and canonical JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    /// Path and query, e.g. `/v1/responses`.
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The canonical JSON body, as sent.
    pub body: Bytes,
}

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

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] =
        [Dialect::Responses, Dialect::ChatCompletions, Dialect::AnthropicMessages, Dialect::Gemini];

    /// Its key: `responses`, `chat_completions`, `anthropic_messages`, `gemini`.
    pub fn key(self) -> &'static str {
        match self {
            Dialect::Responses => "responses",
            Dialect::ChatCompletions => "chat_completions",
            Dialect::AnthropicMessages => "anthropic_messages",
            Dialect::Gemini => "gemini",
        }
    }

    /// The request of `call` with the replayed conversation `input`, built at once (a Session
    /// keeps its [`Transcript`] between requests instead).
    pub fn request(self, call: &Call, input: &[Value]) -> WireRequest {
        let mut transcript = Transcript::new(self);
        for item in input {
            transcript.push(item);
        }
        transcript.request(call, &[])
    }

    /// A decoder for one response body.
    pub fn decoder(self) -> Box<dyn Decode> {
        match self {
            Dialect::Responses => Box::<responses::Decoder>::default(),
            Dialect::ChatCompletions => Box::<chat_completions::Decoder>::default(),
            Dialect::AnthropicMessages => Box::<anthropic_messages::Decoder>::default(),
            Dialect::Gemini => Box::<gemini::Decoder>::default(),
        }
    }

    /// The error code an HTTP error body names, in the OpenAI vocabulary.
    pub fn error_code(self, body: &Value) -> Option<String> {
        match self {
            Dialect::Responses => responses::error_code(body),
            Dialect::ChatCompletions => chat_completions::error_code(body),
            Dialect::AnthropicMessages => anthropic_messages::error_code(body),
            Dialect::Gemini => gemini::error_code(body),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A dialect key that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect `{0}`: expected one of responses, chat_completions, anthropic_messages, gemini")]
pub struct UnknownDialect(pub String);

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Dialect::ALL.into_iter().find(|dialect| dialect.key() == text).ok_or_else(|| UnknownDialect(text.to_owned()))
    }
}
