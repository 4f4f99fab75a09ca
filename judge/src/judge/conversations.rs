//! Each Provider request of a capture read in its dialect, once, with the history shared.
//!
//! A request carries its Session's whole conversation, so reading every request apart would
//! read and keep the conversation once per request (quadratic in a long Session). Requests
//! arrive as increments ([`Increment`]); a request that only appended to its route's
//! conversation (the dialect's [`Dialect::conversation_key`]) is read from its new items alone,
//! and its messages are a prefix of the route's run of messages, extended in place. Any other
//! request is read whole and, unless it extends the run, starts a run of its own.

use std::collections::{BTreeMap, BTreeSet};

use gauntlet_mock_provider::{Dialect, Increment, Message};
use serde_json::Value;

use crate::capture::Request;

/// Every request's reading, in the order of the capture's requests.
#[derive(Debug, Default)]
pub struct Conversations {
    /// Runs of messages; each request's messages are a prefix of one run.
    runs: Vec<Vec<Message>>,
    readings: Vec<Reading>,
    /// Every tool name any request offered the model.
    offered: BTreeSet<String>,
}

#[derive(Debug)]
struct Reading {
    model: Option<String>,
    system: Vec<String>,
    /// How many of `system` the body's top-level fields give (the rest are conversation items).
    top_system: usize,
    run: usize,
    len: usize,
}

/// One request's conversation: what an agent sent its model, whatever the wire.
#[derive(Debug, Clone, Copy)]
pub struct Conversation<'a> {
    /// The model asked for (in the body, or beside it for a wire that names it in the path).
    pub model: Option<&'a str>,
    /// Instructions / system prompt texts, in order.
    pub system: &'a [String],
    /// The conversation, in order.
    pub messages: &'a [Message],
    /// The run of messages this conversation is a prefix of. Requests of one run share their
    /// messages, each at least as many as the one before it, so a rule can read a run's
    /// messages once as its requests grow instead of every request whole.
    pub run: usize,
}

impl Conversations {
    /// Reads `requests` (increments, in capture order) in `dialect`; a body that is not a
    /// request of the dialect reads as an empty conversation.
    pub fn read(dialect: Dialect, requests: &[Request]) -> Conversations {
        let key = dialect.conversation_key();
        let mut bodies: BTreeMap<&str, Value> = BTreeMap::new();
        // Per route: its last reading.
        let mut last: BTreeMap<&str, usize> = BTreeMap::new();
        let mut conversations = Conversations::default();
        for request in requests {
            let body = bodies.entry(&request.route).or_insert(Value::Null);
            request.body.apply(body);
            // The tools are read where a body brings them, not from every request again.
            let tools_changed = match &request.body {
                Increment::Whole { .. } => true,
                Increment::Since(changes) => {
                    changes.changed.contains_key("tools") || changes.appended.contains_key("tools")
                }
            };
            if tools_changed {
                conversations.offered.extend(dialect.tool_names(body));
            }
            let previous = last.get(request.route.as_str()).map(|&idx| &conversations.readings[idx]);
            let reading = match (previous, appended_only(&request.body, key)) {
                (Some(previous), Some(items)) if conversations.runs[previous.run].len() == previous.len => {
                    let (model, system, top_system, new) = read_with(dialect, body, key, items);
                    let mut all = system[..top_system].to_vec();
                    all.extend_from_slice(&previous.system[previous.top_system..]);
                    all.extend_from_slice(&system[top_system..]);
                    let (run, len) = (previous.run, previous.len + new.len());
                    conversations.runs[run].extend(new);
                    Reading { model, system: all, top_system, run, len }
                }
                _ => {
                    let read = dialect.read(body).unwrap_or_default();
                    let top_system = top_system(dialect, body, key);
                    let len = read.messages.len();
                    let run = match previous {
                        Some(previous) if extends(&conversations.runs[previous.run], &read.messages) => {
                            let known = conversations.runs[previous.run].len();
                            conversations.runs[previous.run].extend(read.messages.into_iter().skip(known));
                            previous.run
                        }
                        _ => {
                            conversations.runs.push(read.messages);
                            conversations.runs.len() - 1
                        }
                    };
                    Reading { model: read.model, system: read.system, top_system, run, len }
                }
            };
            let model = reading.model.clone().or_else(|| request.model.clone());
            conversations.readings.push(Reading { model, ..reading });
            last.insert(&request.route, conversations.readings.len() - 1);
        }
        conversations
    }

    /// The conversation of request `idx`.
    pub fn get(&self, idx: usize) -> Option<Conversation<'_>> {
        let reading = self.readings.get(idx)?;
        Some(Conversation {
            model: reading.model.as_deref(),
            system: &reading.system,
            messages: &self.runs[reading.run][..reading.len],
            run: reading.run,
        })
    }

    /// Every request's conversation, in order.
    pub fn iter(&self) -> impl Iterator<Item = Conversation<'_>> {
        (0..self.readings.len()).filter_map(|idx| self.get(idx))
    }

    /// Every tool name any request offered the model (a call naming another is a call to a
    /// tool the agent never offered).
    pub fn offered_tools(&self) -> &BTreeSet<String> {
        &self.offered
    }

    /// How many requests were read.
    pub fn len(&self) -> usize {
        self.readings.len()
    }

    /// No request was read.
    pub fn is_empty(&self) -> bool {
        self.readings.is_empty()
    }
}

/// The items a request added to its conversation, when that is all it did to it (`[]` when it
/// left it as it was); `None` for a whole body or a conversation changed otherwise.
pub fn appended_only<'a>(increment: &'a Increment, key: &str) -> Option<&'a [Value]> {
    let Increment::Since(changes) = increment else { return None };
    if changes.changed.contains_key(key) || changes.removed.iter().any(|removed| removed == key) {
        return None;
    }
    match changes.appended.get(key) {
        Some(Value::Array(items)) => Some(items),
        Some(_) => None,
        None => Some(&[]),
    }
}

/// Reads `body` as if its conversation held only `items`: its model, its system texts (the
/// top-level ones first, how many, then those among `items`) and the messages of `items`.
fn read_with(
    dialect: Dialect,
    body: &mut Value,
    key: &str,
    items: &[Value],
) -> (Option<String>, Vec<String>, usize, Vec<Message>) {
    let read = with_conversation(body, key, items.to_vec(), |body| dialect.read(body).unwrap_or_default());
    (read.model, read.system, top_system(dialect, body, key), read.messages)
}

/// How many system texts the body's top-level fields give, apart from its conversation.
fn top_system(dialect: Dialect, body: &mut Value, key: &str) -> usize {
    with_conversation(body, key, Vec::new(), |body| dialect.read(body).map_or(0, |read| read.system.len()))
}

/// `read` of `body` with its conversation replaced by `items`, which is then put back (the
/// body is the route's running body: it is not copied for this).
fn with_conversation<T>(body: &mut Value, key: &str, items: Vec<Value>, read: impl FnOnce(&Value) -> T) -> T {
    let Some(fields) = body.as_object_mut() else { return read(body) };
    let whole = fields.insert(key.to_owned(), Value::Array(items));
    let value = read(body);
    if let Some(fields) = body.as_object_mut() {
        match whole {
            Some(whole) => fields.insert(key.to_owned(), whole),
            None => fields.remove(key),
        };
    }
    value
}

/// `messages` begins with the whole of `run`.
fn extends(run: &[Message], messages: &[Message]) -> bool {
    messages.len() >= run.len() && messages[..run.len()] == *run
}

impl<'a> Conversation<'a> {
    /// The texts of the user messages.
    pub fn user_texts(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.messages.iter().filter_map(|message| match message {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
    }

    /// The texts of the assistant messages.
    pub fn assistant_texts(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.messages.iter().filter_map(|message| match message {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
    }
}
