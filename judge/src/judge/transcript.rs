//! An ACP transcript read as captured, a list of JSON-RPC entries with no Evidence around it:
//! its connections and the version each negotiated ([`Connection`]), its prompts with their
//! answers and what each was shown ([`Exchange`]), the client's requests and the agent's
//! answers to them ([`Sent`], [`answer_to`]). Pure readings, below the Evidence that caches
//! them and the rules that judge them.

use serde_json::Value;

/// A connection speaks v2 when the client asked for 2 (or later) and the agent answered 2: a
/// client that asked for 1 and was answered 2 goes on in 1 or leaves ("If the Client does not
/// support the version specified by the Agent in the `initialize` response, the Client SHOULD
/// close the connection").
pub(crate) fn negotiates_v2(initialize: &Value, answer: &Value) -> bool {
    let asked = initialize.pointer("/params/protocolVersion").and_then(Value::as_u64);
    let answered = answer.pointer("/result/protocolVersion").and_then(Value::as_u64);
    asked.is_some_and(|asked| asked >= 2) && answered == Some(2)
}

/// One connection of a transcript as the agent sent it: from a client's `initialize` to the
/// next one (a reload starts a fresh agent), and whether the two sides agreed on protocol
/// version 2 in it ([`negotiates_v2`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connection<'a> {
    /// Where its `initialize` stands in the transcript.
    pub(crate) start: usize,
    /// Its entries, `initialize` first.
    pub(crate) entries: &'a [Value],
    /// The client's `initialize` request.
    pub(crate) initialize: &'a Value,
    /// The agent's answer to it, if it answered.
    pub(crate) answer: Option<&'a Value>,
    /// Both sides agreed on version 2.
    pub(crate) v2: bool,
}

impl<'a> Connection<'a> {
    /// Its messages, each with its number in the whole transcript (from 1) and its side.
    pub(crate) fn messages(&self) -> impl Iterator<Item = (usize, &'a str, &'a Value)> + use<'a> {
        let start = self.start;
        self.entries
            .iter()
            .enumerate()
            .filter_map(move |(at, entry)| Some((start + at + 1, entry.get("from")?.as_str()?, entry.get("message")?)))
    }
}

/// The connections of `transcript` (entries before any `initialize` belong to none).
pub(crate) fn connections(transcript: &[Value]) -> Vec<Connection<'_>> {
    let is_initialize = |entry: &Value| {
        entry["from"] == "client" && entry.pointer("/message/method").and_then(Value::as_str) == Some("initialize")
    };
    let starts: Vec<usize> = (0..transcript.len()).filter(|&at| is_initialize(&transcript[at])).collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(transcript.len());
            let entries = &transcript[start..end];
            let initialize = &entries[0]["message"];
            let answer = entries.iter().skip(1).filter(|entry| entry["from"] == "agent").find_map(|entry| {
                let message = entry.get("message")?;
                (message.get("method").is_none() && message.get("id") == initialize.get("id")).then_some(message)
            });
            let v2 = answer.is_some_and(|answer| negotiates_v2(initialize, answer));
            Connection { start, entries, initialize, answer, v2 }
        })
        .collect()
}

/// A `session/update`'s Session and kind.
pub(crate) fn update_of(message: &Value) -> Option<(&str, &str)> {
    if message.get("method").and_then(Value::as_str) != Some("session/update") {
        return None;
    }
    let session_id = message.pointer("/params/sessionId").and_then(Value::as_str)?;
    Some((session_id, message.pointer("/params/update/sessionUpdate").and_then(Value::as_str)?))
}

/// The text of every `agent_message_chunk` the client was shown during a prompt.
pub(crate) fn shown_text(exchange: &Exchange) -> String {
    shown_chunks(exchange).concat()
}

/// The text of each `agent_message_chunk` shown during a prompt, in order.
pub(crate) fn shown_chunks<'a>(exchange: &Exchange<'a>) -> Vec<&'a str> {
    exchange.updates.iter().filter_map(|update| chunk_text(update, "agent_message_chunk")).collect()
}

/// One `session/prompt` in a transcript: the request, its answer and the updates between.
#[derive(Debug)]
pub(crate) struct Exchange<'a> {
    /// The prompt's text.
    pub(crate) text: String,
    /// Its `resource_link` blocks, each `(uri, name)`.
    pub(crate) links: Vec<(String, String)>,
    /// Sent while another prompt of the same Session was still unanswered.
    pub(crate) busy: bool,
    /// The answer, if one came.
    pub(crate) answer: Option<&'a Value>,
    /// Where in the transcript the answer came.
    pub(crate) answered_at: Option<usize>,
    /// `session/update` payloads that arrived while it was the running prompt.
    pub(crate) updates: Vec<&'a Value>,
}

/// The prompts of a transcript, in order.
pub(crate) fn exchanges(transcript: &[Value]) -> Vec<Exchange<'_>> {
    let mut exchanges: Vec<Exchange> = Vec::new();
    // Each prompt's request id (its JSON text), first use kept: a long Session has many.
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // The prompt the client waits on, and the one whose updates these are: after the running
    // prompt's answer, a prompt the agent queued while it ran (still unanswered) streams its own.
    let mut running: Option<usize> = None;
    let mut streaming: Option<usize> = None;
    let mut connection_start = 0;
    // Sessions the client closed on this connection: a prompt to one is no turn
    // (ACP-CLOSE-REFUSES-PROMPT judges it).
    let mut closed: Vec<&Value> = Vec::new();
    for (at, entry) in transcript.iter().enumerate() {
        let Some(message) = entry.get("message") else { continue };
        let from_client = entry.get("from").and_then(Value::as_str) == Some("client");
        let method = message.get("method").and_then(Value::as_str);
        if from_client && method == Some("initialize") {
            // A new connection: request ids start over.
            ids.clear();
            closed.clear();
            (running, streaming, connection_start) = (None, None, exchanges.len());
        }
        let session = message.pointer("/params/sessionId").unwrap_or(&Value::Null);
        if from_client && method == Some("session/close") {
            closed.push(session);
        }
        if from_client && method == Some("session/prompt") && closed.contains(&session) {
            continue;
        }
        if from_client && method == Some("session/prompt") {
            let text = message.pointer("/params/prompt/0/text").and_then(Value::as_str).unwrap_or_default();
            let busy = running.is_some();
            let blocks = message.pointer("/params/prompt").and_then(Value::as_array).into_iter().flatten();
            let links = blocks
                .filter(|block| block["type"] == "resource_link")
                .map(|link| {
                    let field = |key: &str| link[key].as_str().unwrap_or_default().to_owned();
                    (field("uri"), field("name"))
                })
                .collect();
            exchanges.push(Exchange {
                text: text.to_owned(),
                links,
                busy,
                answer: None,
                answered_at: None,
                updates: Vec::new(),
            });
            let id = message.get("id").unwrap_or(&Value::Null).to_string();
            ids.entry(id).or_insert(exchanges.len() - 1);
            if !busy {
                running = Some(exchanges.len() - 1);
                streaming = running;
            }
        } else if !from_client && let Some(update) = message.pointer("/params/update") {
            if let Some(idx) = streaming {
                exchanges[idx].updates.push(update);
            }
        } else if !from_client
            && message.get("method").is_none()
            && let Some(&idx) = message.get("id").and_then(|id| ids.get(&id.to_string()))
        {
            // An answer: JSON-RPC ids are per direction, so an agent's own request
            // (`session/request_permission` with `id: 3`) never answers the client's prompt 3.
            exchanges[idx].answer = Some(message);
            exchanges[idx].answered_at = Some(at);
            if running == Some(idx) {
                running = None;
                let queued = (idx + 1..exchanges.len()).find(|&later| exchanges[later].answer.is_none());
                streaming = queued.filter(|&later| later >= connection_start);
            } else if streaming == Some(idx) {
                streaming = None;
            }
        }
    }
    exchanges
}

/// A request the client sent on the live transcript: where it stands, and the message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent<'a> {
    /// Its index in the transcript.
    pub(crate) at: usize,
    /// The request.
    pub(crate) message: &'a Value,
}

impl<'a> Sent<'a> {
    /// Its `params.sessionId`, if it names one.
    pub(crate) fn session_id(&self) -> Option<&'a str> {
        self.message.pointer("/params/sessionId").and_then(Value::as_str)
    }
}

/// The client's requests of `method` in `transcript`, in order.
pub(crate) fn sent<'a>(transcript: &'a [Value], method: &str) -> Vec<Sent<'a>> {
    transcript
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.get("from").and_then(Value::as_str) == Some("client"))
        .filter_map(|(at, entry)| Some(Sent { at, message: entry.get("message")? }))
        .filter(|sent| sent.message.get("method").and_then(Value::as_str) == Some(method))
        .collect()
}

/// The agent's answer to the client's request `sent`, with where it stands: the first response
/// with its id after it, on the same connection (a new `initialize` starts ids over).
pub(crate) fn answer_to<'a>(transcript: &'a [Value], sent: &Sent) -> Option<(usize, &'a Value)> {
    let id = sent.message.get("id")?;
    for (at, entry) in transcript.iter().enumerate().skip(sent.at + 1) {
        let Some(message) = entry.get("message") else { continue };
        let from_client = entry.get("from").and_then(Value::as_str) == Some("client");
        if from_client && message.get("method").and_then(Value::as_str) == Some("initialize") {
            return None;
        }
        if !from_client && message.get("method").is_none() && message.get("id") == Some(id) {
            return Some((at, message));
        }
    }
    None
}

/// The Sessions the client was served on the live transcript: each `session/new` answer's
/// `sessionId`, and each Session it loaded or resumed with success, in order, once each.
pub(crate) fn served_sessions(transcript: &[Value]) -> Vec<&str> {
    let mut served: Vec<&str> = Vec::new();
    for method in ["session/new", "session/load", "session/resume"] {
        for request in sent(transcript, method) {
            let Some((_, answer)) = answer_to(transcript, &request) else { continue };
            let id = match method {
                "session/new" => answer.pointer("/result/sessionId").and_then(Value::as_str),
                _ => answer.get("result").and(request.session_id()),
            };
            if let Some(id) = id.filter(|id| !served.contains(id)) {
                served.push(id);
            }
        }
    }
    served
}

/// The text of a content-chunk update of the given kind.
pub(crate) fn chunk_text<'a>(update: &'a Value, kind: &str) -> Option<&'a str> {
    (update.get("sessionUpdate").and_then(Value::as_str) == Some(kind))
        .then(|| update.pointer("/content/text").and_then(Value::as_str))
        .flatten()
}

/// The stop reason ACP has for a clean answer the Provider cut short for `reason`.
pub(crate) fn truncation_stop_reason(reason: &str) -> &'static str {
    if reason == "content_filter" { "refusal" } else { "max_tokens" }
}

/// How the agent answered a prompt, for a finding: with its stop reason, with its error (the
/// error's data when it has some), or with neither.
pub(crate) fn describe(stop_reason: Option<&str>, error: Option<&Value>) -> String {
    match (stop_reason, error) {
        (Some(reason), _) => format!("with stop reason `{reason}`"),
        (None, Some(error)) => format!("with error {}", error.get("data").unwrap_or(error)),
        (None, None) => "with neither a result nor an error".to_owned(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// After the running prompt's answer, a prompt the agent queued while it ran streams its
    /// own updates; a queued prompt never answered does not make the next prompt busy.
    #[test]
    fn a_queued_prompt_gets_the_updates_after_the_running_answer() {
        use crate::judge::fixture::{chunk, entry, prompt};
        let answer = |id: i64| serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
        let queued = [
            entry("client", prompt(1, "one")),
            entry("agent", chunk("agent_message_chunk", "a")),
            entry("client", prompt(2, "two")),
            entry("agent", answer(1)),
            entry("agent", chunk("agent_message_chunk", "b")),
            entry("agent", answer(2)),
        ];
        let found = exchanges(&queued);
        assert_eq!(
            (shown_text(&found[0]), shown_text(&found[1]), found[1].busy),
            ("a".to_owned(), "b".to_owned(), true)
        );
        let folded = [
            entry("client", prompt(1, "one")),
            entry("client", prompt(2, "two")),
            entry("agent", answer(1)),
            entry("client", prompt(3, "three")),
            entry("agent", chunk("agent_message_chunk", "c")),
            entry("agent", answer(3)),
        ];
        let found = exchanges(&folded);
        assert!(!found[2].busy);
        assert_eq!((shown_text(&found[1]), shown_text(&found[2])), (String::new(), "c".to_owned()));
    }
    /// JSON-RPC ids are per direction: the agent's `session/request_permission` with the id of
    /// the running prompt is a request of its own, not the prompt's answer (issue 31: a false
    /// ACP-ANSWER-SHOWN when the fourth permission of a turn took id 3).
    #[test]
    fn an_agent_request_with_a_prompt_id_does_not_answer_the_prompt() {
        use crate::judge::fixture::{chunk, entry, prompt};
        let permission = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/request_permission",
            "params": {"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": []}});
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}});
        let transcript = [
            entry("client", prompt(3, "one")),
            entry("agent", permission),
            entry("agent", chunk("agent_message_chunk", "done")),
            entry("agent", answer),
        ];
        let found = exchanges(&transcript);
        assert_eq!(found[0].answered_at, Some(3));
        assert_eq!(shown_text(&found[0]), "done");
    }
}
