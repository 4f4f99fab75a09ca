//! The pieces every dialect's request is built from, below the dialect modules: the
//! [`Envelope`] (a body without its conversation), the [`Messages`] of a conversation kept as
//! canonical text, and the [`WireRequest`] an attempt sends.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::canonical;

/// The images of a replayed user message: each `input_image` part's `data:` URL as its MIME
/// type and base64 payload, for the dialects whose wire takes the two apart
/// (LOG-NO-RESOURCE-BYTES: the bytes reach the Provider, never the Log).
pub fn images(item: &Value) -> Vec<(&str, &str)> {
    let parts = item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("input_image"))
        .filter_map(|part| {
            let url = part.get("image_url")?.as_str()?.strip_prefix("data:")?;
            let (mime_type, data) = url.split_once(";base64,")?;
            Some((mime_type, data))
        })
        .collect()
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

/// A dialect's messages: the closed ones as canonical text, the last one still open.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    /// Canonical JSON of the closed messages, comma-separated.
    pub(super) closed: Vec<u8>,
    /// The last message, which the next item may join.
    pub(super) open: Option<Value>,
}

impl Messages {
    /// The last message, for an item that joins it.
    pub fn last_mut(&mut self) -> Option<&mut Value> {
        self.open.as_mut()
    }

    /// Starts a message: the one before it is closed and written.
    pub fn push(&mut self, message: Value) {
        if let Some(done) = self.open.replace(message) {
            if !self.closed.is_empty() {
                self.closed.push(b',');
            }
            canonical::write(&mut self.closed, &done);
        }
    }

    /// Adds `block` to the last message when it has `role`, under `key` (`content`, `parts`),
    /// else starts a message of `role` with it: the shape of APIs whose roles alternate.
    pub fn join_or_push(&mut self, role: &str, key: &str, block: Value) {
        if let Some(Value::Object(last)) = self.last_mut()
            && last.get("role").and_then(Value::as_str) == Some(role)
            && let Some(Value::Array(blocks)) = last.get_mut(key)
        {
            blocks.push(block);
            return;
        }
        let mut message = Map::new();
        message.insert("role".into(), Value::from(role));
        message.insert(key.into(), Value::Array(vec![block]));
        self.push(Value::Object(message));
    }

    /// The messages as they would be without their closed text: for items pushed only for one
    /// request, which must not change what later requests see.
    pub(super) fn fork(&self) -> Messages {
        Messages { closed: Vec::new(), open: self.open.clone() }
    }
}

/// The tool names of the calls seen so far, by call id: a Gemini function response names its
/// function, which only its call carried.
pub type CallNames = BTreeMap<String, Value>;

/// A request without its conversation: path, headers, the body's other fields, the key the
/// conversation goes under, and the canonical text of messages that lead it (a system message).
pub struct Envelope {
    /// Path and query.
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// Every body field but the conversation.
    pub fields: Map<String, Value>,
    /// The conversation's key: `input`, `messages`, `contents`.
    pub key: &'static str,
    /// Canonical JSON of the messages before the conversation's, comma-separated.
    pub lead: Vec<u8>,
}

impl Envelope {
    /// The envelope of a body whose fields are the object `fields` (anything else has none).
    pub fn new(path: impl Into<String>, headers: Vec<(String, String)>, fields: Value, key: &'static str) -> Envelope {
        let fields = match fields {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        Envelope { path: path.into(), headers, fields, key, lead: Vec::new() }
    }

    /// The same, with `message` before the conversation's.
    pub fn leading(mut self, message: &Value) -> Envelope {
        if !self.lead.is_empty() {
            self.lead.push(b',');
        }
        canonical::write(&mut self.lead, message);
        self
    }
}

/// `content-type: application/json` and `accept: text/event-stream`: the headers of a
/// streamed request in every dialect but Anthropic's, which adds its own.
pub fn sse_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "application/json".into()), ("accept".into(), "text/event-stream".into())]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn images_are_the_data_urls_of_input_image_parts() {
        let item = json!({"role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO"},
            {"type": "input_image", "image_url": "https://example.com/a.png"},
        ]});
        assert_eq!(images(&item), [("image/png", "iVBO")]);
        assert!(images(&json!({"role": "user", "content": "text"})).is_empty());
    }
}
