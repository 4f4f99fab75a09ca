//! Each Provider request of a capture read in its dialect, once, with the history shared.
//!
//! A request carries its Session's whole conversation, so reading every request apart would
//! keep the conversation once per request (quadratic in a long Session). Here a request whose
//! messages extend those of the previous request of its route adds only its new messages to
//! that route's run of messages and is a prefix of it; any other starts a run of its own.

use std::collections::BTreeMap;

use gauntlet_mock_provider::increment::Chain;
use gauntlet_mock_provider::{Dialect, Message};

use crate::capture::Request;

/// Every request's reading, in the order of the capture's requests.
#[derive(Debug, Default)]
pub struct Conversations {
    /// Runs of messages; each request's messages are a prefix of one run.
    runs: Vec<Vec<Message>>,
    readings: Vec<Reading>,
}

#[derive(Debug)]
struct Reading {
    model: Option<String>,
    system: Vec<String>,
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
}

impl Conversations {
    /// Reads `requests` (increments, in capture order) in `dialect`; a body that is not a
    /// request of the dialect reads as an empty conversation.
    pub fn read(dialect: Dialect, requests: &[Request]) -> Conversations {
        let mut bodies = Chain::default();
        // Per route: its current run.
        let mut current: BTreeMap<&str, usize> = BTreeMap::new();
        let mut conversations = Conversations::default();
        for request in requests {
            let body = bodies.apply(&request.route, &request.body);
            let read = dialect.read(body).unwrap_or_default();
            let model = read.model.or_else(|| request.model.clone());
            let len = read.messages.len();
            let run = match current.get(request.route.as_str()) {
                Some(&run) if extends(&conversations.runs[run], &read.messages) => {
                    let known = conversations.runs[run].len();
                    conversations.runs[run].extend(read.messages.into_iter().skip(known));
                    run
                }
                _ => {
                    conversations.runs.push(read.messages);
                    conversations.runs.len() - 1
                }
            };
            current.insert(&request.route, run);
            conversations.readings.push(Reading { model, system: read.system, run, len });
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
        })
    }

    /// Every request's conversation, in order.
    pub fn iter(&self) -> impl Iterator<Item = Conversation<'_>> {
        (0..self.readings.len()).filter_map(|idx| self.get(idx))
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
