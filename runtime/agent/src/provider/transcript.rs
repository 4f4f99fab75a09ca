//! The replayed conversation in one dialect's wire shape, kept between requests.
//!
//! A request body carries the whole conversation, so building each body from scratch costs
//! the square of a conversation's length. History only grows and the replay fold's items
//! never change once emitted ([`crate::replay::Replay`]), so a [`Transcript`] takes each item
//! once, as it is folded: the dialect turns it into a message or joins it to the last one,
//! and a message no later item can join is written to canonical JSON then and kept as text.
//! A request is its fields around a copy of that text, byte for byte what a whole-body
//! serialization of the same request gives (LOG-DETERMINISTIC).

use bytes::Bytes;
use serde_json::Value;

use super::Call;
use super::body::{CallNames, Messages, WireRequest};
use super::dialect::Dialect;
use crate::canonical;

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

    /// The conversation of `items` at once (a Session keeps its transcript between requests
    /// instead).
    pub fn of(dialect: Dialect, items: &[Value]) -> Transcript {
        let mut transcript = Transcript::new(dialect);
        for item in items {
            transcript.push(item);
        }
        transcript
    }

    /// Takes the next replay item for good.
    pub fn push(&mut self, item: &Value) {
        self.dialect.push_item(&mut self.messages, &mut self.names, item);
    }

    /// The request of `call` with this conversation, and `tail` (items for this request only,
    /// such as the outputs that close calls still pending) after it.
    pub fn request(&self, call: &Call, tail: &[Value]) -> WireRequest {
        let envelope = self.dialect.envelope(call);
        let mut extra = self.messages.fork();
        let mut names = if tail.is_empty() { CallNames::new() } else { self.names.clone() };
        for item in tail {
            self.dialect.push_item(&mut extra, &mut names, item);
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
                assert_eq!(
                    request,
                    Transcript::of(dialect, so_far).request(&call(), &[]),
                    "{dialect} after item {index}"
                );
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                assert_eq!(canonical::value_to_string(&body).as_bytes(), &request.body[..], "{dialect}");
                let with_tail = transcript.request(&call(), std::slice::from_ref(&closer));
                let whole: Vec<Value> = so_far.iter().chain([&closer]).cloned().collect();
                assert_eq!(
                    with_tail,
                    Transcript::of(dialect, &whole).request(&call(), &[]),
                    "{dialect} tail after item {index}"
                );
            }
        }
    }
}
