//! The replayed conversation in one dialect's wire shape, kept between requests.
//!
//! A request body carries the whole conversation, so building each body from scratch costs
//! the square of a conversation's length. History only grows and the replay fold's items
//! never change once emitted ([`crate::replay::Replay`]), so a [`Transcript`] takes each item
//! once, as it is folded: the dialect turns it into a message or joins it to the last one,
//! and a message no later item can join is written to canonical JSON then and kept as text.
//! A request is its fields around a copy of that text, byte for byte what a whole-body
//! serialization of the same request gives (LOG-DETERMINISTIC).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::dialect::{Dialect, WireRequest};
use super::{Call, anthropic_messages, chat_completions, gemini, responses};
use crate::canonical;

/// A dialect's messages: the closed ones as canonical text, the last one still open.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    /// Canonical JSON of the closed messages, comma-separated.
    closed: Vec<u8>,
    /// The last message, which the next item may join.
    open: Option<Value>,
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
    fn fork(&self) -> Messages {
        Messages { closed: Vec::new(), open: self.open.clone() }
    }
}

/// The tool names of the calls seen so far, by call id: a Gemini function response names its
/// function, which only its call carried.
pub type CallNames = BTreeMap<String, Value>;

/// The conversation of one Session in one dialect, item by item.
#[derive(Debug, Clone)]
pub struct Transcript {
    dialect: Dialect,
    messages: Messages,
    names: CallNames,
}

impl Transcript {
    /// An empty conversation in `dialect`.
    pub fn new(dialect: Dialect) -> Transcript {
        Transcript { dialect, messages: Messages::default(), names: CallNames::new() }
    }

    /// Takes the next replay item for good.
    pub fn push(&mut self, item: &Value) {
        push_item(self.dialect, &mut self.messages, &mut self.names, item);
    }

    /// The request of `call` with this conversation, and `tail` (items for this request only,
    /// such as the outputs that close calls still pending) after it.
    pub fn request(&self, call: &Call, tail: &[Value]) -> WireRequest {
        let envelope = match self.dialect {
            Dialect::Responses => responses::envelope(call),
            Dialect::ChatCompletions => chat_completions::envelope(call),
            Dialect::AnthropicMessages => anthropic_messages::envelope(call),
            Dialect::Gemini => gemini::envelope(call),
        };
        let mut extra = self.messages.fork();
        let mut names = if tail.is_empty() { CallNames::new() } else { self.names.clone() };
        for item in tail {
            push_item(self.dialect, &mut extra, &mut names, item);
        }
        let segments = [envelope.lead.as_slice(), self.messages.closed.as_slice(), extra.closed.as_slice()];
        let mut body = Vec::with_capacity(segments.iter().map(|segment| segment.len()).sum::<usize>() + 4096);
        canonical::write_object_with(&mut body, &envelope.fields, envelope.key, |out| {
            out.push(b'[');
            let mut first = true;
            for segment in segments.into_iter().filter(|segment| !segment.is_empty()) {
                if !first {
                    out.push(b',');
                }
                out.extend_from_slice(segment);
                first = false;
            }
            if let Some(open) = &extra.open {
                if !first {
                    out.push(b',');
                }
                canonical::write(out, open);
            }
            out.push(b']');
        });
        WireRequest { path: envelope.path, headers: envelope.headers, body: Bytes::from(body) }
    }
}

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

fn push_item(dialect: Dialect, messages: &mut Messages, names: &mut CallNames, item: &Value) {
    if item.get("type").and_then(Value::as_str) == Some("function_call")
        && let Some(call_id) = item.get("call_id").and_then(Value::as_str)
    {
        names.insert(call_id.to_owned(), item.get("name").cloned().unwrap_or(Value::Null));
    }
    match dialect {
        Dialect::Responses => messages.push(item.clone()),
        Dialect::ChatCompletions => chat_completions::push_item(messages, item),
        Dialect::AnthropicMessages => anthropic_messages::push_item(messages, item),
        Dialect::Gemini => gemini::push_item(messages, names, item),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::reasoning;

    fn call() -> Call {
        Call::with_read_tool("m", "Be brief.")
    }

    /// Items in every shape the fold emits, in orders that join and split messages.
    fn items() -> Vec<Value> {
        let user = |text: &str| json!({"role": "user", "content": [{"type": "input_text", "text": text}]});
        let assistant = |text: &str| json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]});
        let call =
            |id: &str| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": "{\"path\":\"a\"}"});
        let output = |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "A \"quoted\"\n"});
        vec![
            user("go"),
            reasoning::item("plan", Some("sig")),
            assistant("Reading."),
            call("c1"),
            call("c2"),
            output("c1"),
            output("c2"),
            reasoning::item("unsigned", None),
            assistant("done"),
            user("next"),
            call("c3"),
            user("after an orphan"),
        ]
    }

    /// A transcript fed item by item, asked for a request after each (with a pending call's
    /// closing output as tail now and then), sends the bytes of one built at once from the
    /// same items, and they are canonical JSON.
    #[test]
    fn item_by_item_is_byte_for_byte_the_whole_conversation() {
        let items = items();
        let closer = json!({"type": "function_call_output", "call_id": "c3", "output": "orphan"});
        for dialect in Dialect::ALL {
            let mut transcript = Transcript::new(dialect);
            for (index, item) in items.iter().enumerate() {
                transcript.push(item);
                let so_far = &items[..=index];
                let request = transcript.request(&call(), &[]);
                assert_eq!(request, dialect.request(&call(), so_far), "{dialect} after item {index}");
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                assert_eq!(canonical::value_to_string(&body).as_bytes(), &request.body[..], "{dialect}");
                let with_tail = transcript.request(&call(), std::slice::from_ref(&closer));
                let whole: Vec<Value> = so_far.iter().chain([&closer]).cloned().collect();
                assert_eq!(with_tail, dialect.request(&call(), &whole), "{dialect} tail after item {index}");
            }
        }
    }
}
