//! The wire formats the runtime speaks: [`Dialect`], one arm per dialect module below it, each
//! building a request from a [`Call`] ([`body`](super::body)'s pieces) and decoding a stream
//! with a [`Decode`]r into [`Delta`](super::Delta)s and one [`Reply`](super::Reply) or
//! [`ProviderFailure`](super::ProviderFailure).
//!
//! Adding a dialect is one module in `dialect/` (`envelope`, `push_item`, `Decoder`,
//! `error_code`) and one arm in each `match` below. The runtime shares no code with the mock's
//! encoders, so each checks the other.

pub mod anthropic_messages;
pub mod chat_completions;
pub mod gemini;
pub mod responses;

/// The most output tokens each call allows the model, named in every dialect (Anthropic's
/// Messages API requires it), so a cut by that limit is the same call on every wire.
pub const MAX_OUTPUT_TOKENS: u64 = 32_000;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::Call;
use super::body::{CallNames, Envelope, Messages};
use super::decode::Decode;

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

    /// The body of `call` without its conversation.
    pub fn envelope(self, call: &Call) -> Envelope {
        match self {
            Dialect::Responses => responses::envelope(call),
            Dialect::ChatCompletions => chat_completions::envelope(call),
            Dialect::AnthropicMessages => anthropic_messages::envelope(call),
            Dialect::Gemini => gemini::envelope(call),
        }
    }

    /// Takes one replay item into `messages`, in this dialect's shape; `names` has the tool
    /// name of every call seen so far, by call id.
    pub fn push_item(self, messages: &mut Messages, names: &mut CallNames, item: &Value) {
        if item.get("type").and_then(Value::as_str) == Some("function_call")
            && let Some(call_id) = item.get("call_id").and_then(Value::as_str)
        {
            names.insert(call_id.to_owned(), item.get("name").cloned().unwrap_or(Value::Null));
        }
        match self {
            Dialect::Responses => messages.push(item.clone()),
            Dialect::ChatCompletions => chat_completions::push_item(messages, item),
            Dialect::AnthropicMessages => anthropic_messages::push_item(messages, item),
            Dialect::Gemini => gemini::push_item(messages, names, item),
        }
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
