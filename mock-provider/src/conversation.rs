//! The dialect-neutral view of a request: what an agent sent its model, whatever wire format it
//! spoke. Each dialect module reads its request bodies into a [`Conversation`]
//! ([`crate::Dialect::read`]), so one rule judges every dialect the same way (REPLAY-*,
//! WIRE-*, MOCK-*); goldens keep the raw bodies.

use serde::Serialize;
use serde_json::Value;

/// A request body, read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Conversation {
    /// The model asked for.
    pub model: Option<String>,
    /// Instructions / system prompt texts, in order.
    pub system: Vec<String>,
    /// The conversation, in order.
    pub messages: Vec<Message>,
}

/// One element of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "message", rename_all = "snake_case")]
pub enum Message {
    /// A user message's text parts, joined.
    User {
        /// The text.
        text: String,
    },
    /// An assistant message's text parts, joined.
    Assistant {
        /// The text.
        text: String,
    },
    /// A reasoning item replayed to the model.
    Reasoning {
        /// Its summary or thinking text.
        text: String,
        /// Its opaque payload (encrypted content, signature), if any.
        opaque: Option<String>,
    },
    /// A tool call the model made.
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments as sent (a JSON string on most wires).
        args: Value,
    },
    /// A tool result sent back.
    ToolResult {
        /// The call id it answers.
        call_id: String,
        /// The output text.
        output: String,
    },
    /// An image the body carries in a user message, after that message's text.
    Image {
        /// A `data:<mime>;base64,<payload>` URL for an inline image (whatever form the wire
        /// gave it), or the URL it names.
        url: String,
    },
    /// Anything else the body carries as conversation input, by its wire type.
    Other {
        /// The wire type or role.
        kind: String,
    },
}

/// A body that is not a request of the dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ViewError(pub String);

impl Conversation {
    /// The texts of the user messages.
    pub fn user_texts(&self) -> impl Iterator<Item = &str> {
        self.messages.iter().filter_map(|message| match message {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
    }

    /// The texts of the assistant messages.
    pub fn assistant_texts(&self) -> impl Iterator<Item = &str> {
        self.messages.iter().filter_map(|message| match message {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

impl Message {
    /// The text a model reads in it: a message's text, a reasoning text, a tool output.
    pub fn text(&self) -> Option<&str> {
        match self {
            Message::User { text } | Message::Assistant { text } | Message::Reasoning { text, .. } => Some(text),
            Message::ToolResult { output, .. } => Some(output),
            Message::ToolCall { .. } | Message::Image { .. } | Message::Other { .. } => None,
        }
    }
}

/// The `data:` URL of an inline image.
pub fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// The texts of a message `content`: a string, or an array of parts with `text`, joined.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}
