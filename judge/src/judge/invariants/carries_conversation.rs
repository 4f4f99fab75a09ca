//! REPLAY-CARRIES-CONVERSATION: each Provider request carries the Session's conversation as
//! the Log stood when it was sent: every user message so far, every clean answer, every tool
//! call (its name and arguments) with its result (the output the Log recorded, as recorded),
//! every terminal Subagent summary recorded while no call was pending, every `branch_summary`'s
//! summary where it stands, in order, and nothing else. After a `history_compaction` the latest
//! one's summary stands in place of the range it covers, and a call of the range whose result
//! comes after it is carried beside that result (REPLAY-COMPACTION-SUMMARY,
//! REPLAY-BRANCH-SUMMARY, REPLAY-FORK-LINEAGE). A request that asks for a summary carries the
//! conversation and then the `instruction` its compaction records (a failed summary call's
//! `turn_failed` records it as `details.compaction_instruction`). A summary is matched by
//! containment: the user message that carries it may frame it as the runtime likes. The other
//! replay rules say what must not be there; this one says what must.
//!
//! The expected conversation is the contract's fold of the Log, computed here, apart from the
//! runtime's `replay.rs`. A request is placed in its turn by the last user message of the Log
//! it carries; it must then equal the fold of the Log up to some point of that turn (the
//! request of a tool loop carries the calls and results recorded so far). Reasoning items are
//! left out on both sides (REPLAY-REASONING-SAME-MODEL judges them), and so are a prompt's
//! images (REPLAY-CARRIES-IMAGE); a prompt's links are carried after its text, each by its URI
//! in any form (ACP-PROMPT-LINK-CARRIED). After a turn the model refused (a content filter's stop), a
//! request may carry the conversation with that turn or without it
//! (ACP-REFUSAL-LEAVES-CONVERSATION says which an agent that answered `refusal` owes). Seed 000
//! says a completed Subagent "May be folded into parent Provider context": a request that
//! carries the conversation without any Subagent summary breaks only the reference's choice
//! (SUB-REF-DETAILS, a MAY). Judged on every Log: the root's and each child Session's, with
//! the requests of its route.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use gauntlet_agent::EventType;
use gauntlet_mock_provider::Message;
use serde_json::Value;

use crate::judge::evidence::{Evidence, LogRole};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{Prompts, read_new_messages};
use crate::log_line::Line;

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-CARRIES-CONVERSATION",
    also: &[
        "REPLAY-CLEAN-ANSWER",
        "REPLAY-COMPACTION-SUMMARY",
        "REPLAY-BRANCH-SUMMARY",
        "REPLAY-FORK-LINEAGE",
        REFERENCE,
    ],
    name: "carries_conversation",
    applies: Scope::Replay,
    check,
};

/// What a request that folds no Subagent summary, but carries the rest, breaks.
const REFERENCE: &str = "SUB-REF-DETAILS";

/// One item of a conversation, as much as the contract fixes of it, borrowed from the Log or
/// the request it was read from (a long Session's requests are not copied to be compared).
#[derive(Debug, Clone)]
enum Item<'a> {
    User(Cow<'a, str>),
    /// A prompt that pointed at resources (its Log `links`): a user message of its text, then
    /// each link's URI in any form (the reference writes a Markdown link per line).
    Linked(&'a str, Vec<&'a str>),
    /// A compaction's or branch's summary: a message that contains it (the reference sends it
    /// as user content, pixir.md 3.2; seed 000 says only that it is replayed).
    Summary(&'a str),
    Assistant(&'a str),
    /// A call: its id, tool name and arguments (parsed when the wire sends them as text).
    Call(&'a str, &'a str, Cow<'a, Value>),
    /// A result: its call id and output.
    Result(&'a str, Output<'a>),
    /// Anything else a request carries.
    Other(String),
}

impl std::fmt::Display for Item<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::User(text) => write!(f, "user {text:?}"),
            Item::Linked(text, uris) => write!(f, "user {text:?} with the links {uris:?}"),
            Item::Summary(text) => write!(f, "a message with the summary {text:?}"),
            Item::Assistant(text) => write!(f, "assistant {text:?}"),
            Item::Call(id, name, args) => write!(f, "call `{id}` of {name} with {args}"),
            Item::Result(id, Output::Text(output)) => write!(f, "result of `{id}` {output:?}"),
            Item::Result(id, Output::Any) => write!(f, "result of `{id}`"),
            Item::Other(kind) => write!(f, "{kind}"),
        }
    }
}

impl PartialEq for Item<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Item::Summary(summary), Item::User(text)) | (Item::User(text), Item::Summary(summary)) => {
                text.contains(*summary)
            }
            (Item::Summary(summary), Item::Assistant(text)) | (Item::Assistant(text), Item::Summary(summary)) => {
                text.contains(*summary)
            }
            (Item::Summary(a), Item::Summary(b)) => a == b,
            (Item::User(a), Item::User(b)) => a == b,
            (Item::Linked(text, uris), Item::User(sent)) | (Item::User(sent), Item::Linked(text, uris)) => {
                sent.strip_prefix(*text).is_some_and(|links| uris.iter().all(|uri| links.contains(uri)))
            }
            (Item::Linked(a, x), Item::Linked(b, y)) => a == b && x == y,
            (Item::Assistant(a), Item::Assistant(b)) => a == b,
            (Item::Call(a, b, c), Item::Call(x, y, z)) => a == x && b == y && same_arguments(c, z),
            (Item::Result(a, b), Item::Result(x, y)) => a == x && b == y,
            (Item::Other(a), Item::Other(b)) => a == b,
            _ => false,
        }
    }
}

/// Arguments the same, or the model's text that is no JSON object (kept as text: a string
/// here, since text that parses is read as what it parses to) carried as an object by a wire
/// whose arguments are one (Anthropic's `tool_use.input`), which cannot carry the text, so
/// any object stands for it (ACP-INVALID-ARGUMENTS).
fn same_arguments(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::String(_), Value::Object(_)) | (Value::Object(_), Value::String(_))) || a == b
}

/// A tool result's output as far as the Log fixes it: the text of a result that recorded one
/// (the model must get it as it is); any text for a result recorded as an object (an error, a
/// delegation outcome) and for the synthetic result of a call still pending, whose wording the
/// contract leaves to the runtime.
#[derive(Debug, Clone, Copy)]
enum Output<'a> {
    Text(&'a str),
    Any,
}

impl PartialEq for Output<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Output::Text(a), Output::Text(b)) => a == b,
            _ => true,
        }
    }
}

impl Eq for Output<'_> {}

/// The contract's fold of a Log, point by point: after each line, which epoch of the
/// conversation stands (each compaction starts one), how many items it has and which calls
/// still wait for their result (they would be closed as orphans if the conversation were sent
/// then).
struct Fold<'a> {
    /// The items of each epoch: before the first compaction, then after each.
    epochs: Vec<Vec<Item<'a>>>,
    /// For each line, the conversation right after it.
    points: Vec<Point<'a>>,
}

/// The conversation right after one line of the Log.
struct Point<'a> {
    /// Its epoch.
    epoch: usize,
    /// How many of the epoch's items it has.
    len: usize,
    /// Calls pending, with the output a request may carry for each: the one the Log records
    /// for it later, if any; else any synthetic text.
    pending: Vec<(&'a str, Output<'a>)>,
}

/// The fold of one epoch as it grows line by line.
#[derive(Default)]
struct Epoch<'a> {
    items: Vec<Item<'a>>,
    pending: BTreeMap<&'a str, ()>,
    /// Calls the epoch's compaction covers without their result: carried beside it.
    compacted: BTreeMap<&'a str, Item<'a>>,
}

impl<'a> Epoch<'a> {
    fn close(&mut self) {
        self.items.extend(std::mem::take(&mut self.pending).into_keys().map(|id| Item::Result(id, Output::Any)));
    }

    fn step(&mut self, line: &'a Line) {
        let call_id = line.call_id().unwrap_or_default();
        match line.kind.known() {
            Some(EventType::ToolCall) => {
                self.items.push(call(line));
                self.pending.insert(call_id, ());
            }
            Some(EventType::ToolResult) => {
                if let Some(call) = self.compacted.remove(call_id) {
                    self.items.push(call);
                    self.pending.insert(call_id, ());
                }
                if self.pending.remove(call_id).is_some() {
                    let output = line.tool_result().and_then(|result| result.output).map_or(Output::Any, Output::Text);
                    self.items.push(Item::Result(call_id, output));
                }
            }
            Some(EventType::SubagentEvent) => {
                if self.pending.is_empty()
                    && let Some(text) = subagent_summary(line)
                {
                    self.items.push(Item::User(Cow::Owned(text)));
                }
            }
            Some(EventType::ProviderUsage | EventType::PermissionDecision | EventType::WorkflowEvent) => {}
            Some(EventType::UserMessage) => {
                self.close();
                let Some(message) = line.user_message() else { return };
                let text = message.text.unwrap_or_default();
                let uris: Vec<&str> = message.links.iter().filter_map(|link| link.get("uri")?.as_str()).collect();
                self.items.push(if uris.is_empty() {
                    Item::User(Cow::Borrowed(text))
                } else {
                    Item::Linked(text, uris)
                });
            }
            Some(EventType::AssistantMessage) => {
                self.close();
                // An empty answer has nothing to carry (a request may leave it out).
                let Some(message) = line.assistant_message() else { return };
                let text = message.text.unwrap_or_default();
                if !message.partial && !text.is_empty() {
                    self.items.push(Item::Assistant(text));
                }
            }
            Some(EventType::BranchSummary) => {
                self.close();
                let summary = line.summary().and_then(|summary| summary.summary);
                self.items.push(Item::Summary(summary.unwrap_or_default()));
            }
            _ => self.close(),
        }
    }

    /// The fold of `before` (the lines before `compaction`) with the range `from..=to` in the
    /// place of its summary; other compactions count only through it.
    fn compacted(before: &'a [Line], compaction: &'a Line, (from, to): (u64, u64)) -> Epoch<'a> {
        let mut epoch = Epoch::default();
        let mut summarized = false;
        let summary = Item::Summary(compaction.summary().and_then(|summary| summary.summary).unwrap_or_default());
        for line in before.iter().filter(|line| line.kind != EventType::HistoryCompaction) {
            let seq = line.seq.unwrap_or_default();
            if seq < from {
                epoch.step(line);
                continue;
            }
            if !summarized {
                epoch.close();
                epoch.items.push(summary.clone());
                summarized = true;
            }
            let call_id = line.call_id().unwrap_or_default();
            match line.kind.known() {
                Some(EventType::ToolCall) if seq <= to => {
                    epoch.compacted.insert(call_id, call(line));
                }
                Some(EventType::ToolResult) if seq <= to => {
                    epoch.compacted.remove(call_id);
                }
                _ if seq <= to => {}
                _ => epoch.step(line),
            }
        }
        if !summarized {
            epoch.close();
            epoch.items.push(summary);
        }
        epoch
    }
}

/// A `tool_call` line as an item; a call recorded without arguments was made with none: `{}`.
fn call(line: &Line) -> Item<'_> {
    let call = line.tool_call();
    let args = call.and_then(|call| call.args).map_or_else(|| Cow::Owned(Value::Object(Default::default())), parsed);
    let (call_id, name) = call.map(|call| (call.call_id, call.name)).unwrap_or_default();
    Item::Call(call_id.unwrap_or_default(), name.unwrap_or_default(), args)
}

/// Call arguments as JSON: text is read as what it parses to, on the wire (most wires send
/// arguments as text) as in the Log (which keeps the model's text when it is no object).
fn parsed(args: &Value) -> Cow<'_, Value> {
    match args {
        Value::String(text) => serde_json::from_str(text).map_or(Cow::Borrowed(args), Cow::Owned),
        other => Cow::Borrowed(other),
    }
}

/// The `range` of a `history_compaction` line, when it has a valid one.
fn compaction_range(line: &Line) -> Option<(u64, u64)> {
    (line.kind == EventType::HistoryCompaction).then_some(())?;
    let summary = line.summary()?;
    let (from, to) = (summary.from_seq?, summary.to_seq?);
    (from <= to).then_some((from, to))
}

impl<'a> Fold<'a> {
    fn of(lines: &'a [Line]) -> Fold<'a> {
        let mut epochs = Vec::new();
        let mut epoch = Epoch::default();
        let mut points = Vec::with_capacity(lines.len());
        let recorded: BTreeMap<&'a str, Output<'a>> = lines
            .iter()
            .filter_map(Line::tool_result)
            .filter_map(|result| Some((result.call_id?, result.output.map_or(Output::Any, Output::Text))))
            .collect();
        for (at, line) in lines.iter().enumerate() {
            match compaction_range(line) {
                Some(range) => {
                    let compacted = Epoch::compacted(&lines[..at], line, range);
                    epochs.push(std::mem::replace(&mut epoch, compacted).items);
                }
                None => epoch.step(line),
            }
            // Only a tool loop leaves calls pending, so this stays short.
            let waiting = epoch.pending.keys().map(|id| (*id, recorded.get(id).copied().unwrap_or(Output::Any)));
            points.push(Point { epoch: epochs.len(), len: epoch.items.len(), pending: waiting.collect() });
        }
        epochs.push(epoch.items);
        Fold { epochs, points }
    }

    /// The conversation as it would be sent right after line `at`, item by item.
    fn at(&self, at: usize) -> impl Iterator<Item = Item<'a>> + '_ {
        let Point { epoch, len, pending } = &self.points[at];
        self.epochs[*epoch][..*len].iter().cloned().chain(pending.iter().map(|(id, output)| Item::Result(id, *output)))
    }

    /// `carried` is exactly the conversation right after line `at`, given that its first
    /// `agreed[epoch]` items are known to be the epoch's: only the calls pending then are compared.
    fn is_at(&self, at: usize, carried: &[Item<'a>], agreed: &[usize]) -> bool {
        let Point { epoch, len, pending } = &self.points[at];
        let agreed = agreed.get(*epoch).copied().unwrap_or_default().min(carried.len());
        carried.len() == len + pending.len()
            && *len <= agreed
            && pending.iter().zip(&carried[*len..]).all(|((id, output), item)| *item == Item::Result(id, *output))
    }
}

/// A run of messages (requests that carry prefixes of the same messages) read as items once,
/// as its requests grow.
#[derive(Default)]
struct Run<'a> {
    items: Vec<Item<'a>>,
    /// For each number of the run's messages read, how many items they give.
    counts: Vec<usize>,
    /// For each epoch of the fold, how many leading items are the epoch's.
    agreed: Vec<usize>,
    /// The last of the Log's user messages whose text the messages read so far carry (an
    /// index into them): the turn of the run's latest request.
    turn: Option<usize>,
}

impl<'a> Run<'a> {
    /// Reads the run's `new` messages.
    fn grow(&mut self, new: &'a [Message], fold: &Fold<'a>, prompts: &Prompts<'_>) {
        if self.counts.is_empty() {
            self.counts.push(0);
        }
        for message in new {
            self.turn = self.turn.max(prompts.carried_by(message));
            self.items.extend(item(message));
            self.counts.push(self.items.len());
        }
        self.agreed.resize(fold.epochs.len(), 0);
        for (agreed, items) in self.agreed.iter_mut().zip(&fold.epochs) {
            while *agreed < self.items.len() && items.get(*agreed) == Some(&self.items[*agreed]) {
                *agreed += 1;
            }
        }
    }
}

/// `Subagent <id> (<agent>) <status>: <summary>` for a terminal lifecycle event (pixir.md 3.2).
fn subagent_summary(line: &Line) -> Option<String> {
    let event = line.subagent_event()?;
    let status = event.lifecycle_event().filter(|event| event.is_replayed())?.status();
    Some(format!(
        "Subagent {} ({}) {status}: {}",
        event.subagent_id?,
        event.agent.unwrap_or("default"),
        event.summary.unwrap_or_default()
    ))
}

/// A message as an item of the conversation; reasoning is not one, nor an attached image
/// (REPLAY-CARRIES-IMAGE judges those).
fn item(message: &Message) -> Option<Item<'_>> {
    match message {
        Message::Reasoning { .. } | Message::Image { .. } => None,
        Message::ToolCall { call_id, name, args } => Some(Item::Call(call_id, name, parsed(args))),
        Message::ToolResult { call_id, output } => Some(Item::Result(call_id, Output::Text(output))),
        Message::User { text } => Some(Item::User(Cow::Borrowed(text))),
        Message::Assistant { text } if text.is_empty() => None,
        Message::Assistant { text } => Some(Item::Assistant(text)),
        Message::Other { kind } => Some(Item::Other(format!("an item of kind {kind:?}"))),
    }
}

fn check(evidence: &Evidence) -> Vec<Violation> {
    let found = held_to(evidence, &evidence.lines);
    if found.is_empty() || !evidence.lines.iter().any(|line| line.kind == EventType::SubagentEvent) {
        return found.into_values().map(Violation::new).collect();
    }
    // Folding a Subagent's summary is a MAY of seed 000: a request that carries the
    // conversation without any breaks only the reference's choice.
    let unfolded: Vec<Line> =
        evidence.lines.iter().filter(|line| line.kind != EventType::SubagentEvent).cloned().collect();
    let otherwise = held_to(evidence, &unfolded);
    found
        .into_iter()
        .map(|(n, message)| {
            if otherwise.contains_key(&n) {
                Violation::new(message)
            } else {
                Violation::new(format!("{message} (the reference folds a terminal Subagent's summary in)"))
                    .of(REFERENCE)
            }
        })
        .collect()
}

/// Each request that carries neither the conversation `lines` fold to, nor (after a refused
/// turn) that conversation without the refused turns, by its number, with the evidence.
fn held_to(evidence: &Evidence, lines: &[Line]) -> BTreeMap<usize, String> {
    let mut found = mismatches(evidence, lines);
    // After a refusal the conversation may go on without the refused turn (ACP v1's `refusal`
    // says it will: ACP-REFUSAL-LEAVES-CONVERSATION), or with it: a request is held to the
    // conversation with every refused turn, or without the first one, the first two, and so
    // on (a refused turn's own requests carry it).
    let mut dropped = BTreeSet::new();
    for turn in refused_turns(lines) {
        if found.is_empty() {
            break;
        }
        dropped.extend(turn);
        let without: Vec<Line> =
            lines.iter().filter(|line| line.seq.is_none_or(|seq| !dropped.contains(&seq))).cloned().collect();
        let otherwise = mismatches(evidence, &without);
        found.retain(|n, _| otherwise.contains_key(n));
    }
    found
}

/// An answer a content filter stopped: the model refused the turn.
fn refuses(line: &Line) -> bool {
    line.assistant_message().is_some_and(|message| !message.partial && message.truncation == Some("content_filter"))
}

/// The seqs of the lines of each turn that holds a refused answer, from its user message to
/// the next one, in order.
fn refused_turns(lines: &[Line]) -> Vec<Vec<u64>> {
    let starts: Vec<usize> = (0..lines.len()).filter(|&at| lines[at].kind == EventType::UserMessage).collect();
    let turns = starts
        .iter()
        .enumerate()
        .map(|(idx, &start)| &lines[start..starts.get(idx + 1).copied().unwrap_or(lines.len())]);
    turns
        .filter(|turn| turn.iter().any(refuses))
        .map(|turn| turn.iter().filter_map(|line| line.seq).collect())
        .collect()
}

/// Each request that does not carry the conversation `lines` fold to, by its number, with the
/// evidence.
fn mismatches(evidence: &Evidence, lines: &[Line]) -> BTreeMap<usize, String> {
    let prompts = Prompts::of(lines);
    let users = &prompts.lines;
    if users.is_empty() {
        return BTreeMap::new(); // no Log, or nothing asked yet: nothing to carry
    }
    let fold = Fold::of(lines);
    // What a request that asks for a summary carries after the conversation.
    // What a request that asks for a summary carries after the conversation: the instruction
    // its compaction records, or the `turn_failed` of a summary call that failed.
    let instructions: Vec<&str> = lines
        .iter()
        .filter_map(|line| match line.kind.known() {
            Some(EventType::HistoryCompaction) => line.summary()?.instruction,
            Some(EventType::TurnFailed) => line.turn_failed()?.detail("compaction_instruction")?.as_str(),
            _ => None,
        })
        .collect();
    let mut runs: BTreeMap<usize, Run> = BTreeMap::new();
    let mut floors: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = BTreeMap::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        // The root's Log judges the root's requests; a child's capture holds only its own.
        if evidence.role == LogRole::Root && request.route != gauntlet_mock_provider::ROOT {
            continue;
        }
        let run = runs.entry(conversation.run).or_default();
        run.grow(new, &fold, &prompts);
        let mut carried = &run.items[..run.counts[conversation.messages.len()]];
        let asks_summary = match carried.split_last() {
            Some((Item::User(text), conversation)) if instructions.contains(&text.as_ref()) => {
                carried = conversation;
                true
            }
            _ => false,
        };
        // After a request that asked for a summary, the next of its route comes after the
        // compaction that recorded it.
        let floor = floors.remove(request.route.as_str()).unwrap_or_default();
        let n = idx + 1;
        // The turn: the last of the Log's user messages the request carries (a run's requests
        // grow, so the latest request of a run carries all it has read).
        let Some(turn) = run.turn else {
            problems.insert(n, format!("request {n} carries none of the Session's user messages"));
            continue;
        };
        let end = users.get(turn + 1).copied().unwrap_or(lines.len());
        let points = users[turn].max(floor)..end.max(floor + 1).min(lines.len());
        if let Some(at) = points.clone().find(|&at| fold.is_at(at, carried, &run.agreed)) {
            // The compaction of the same turn: a summary call that failed records none.
            let compaction =
                lines.get(at + 1..end).unwrap_or_default().iter().position(|line| compaction_range(line).is_some());
            if let Some(after) = compaction.filter(|_| asks_summary) {
                floors.insert(&request.route, at + 1 + after);
            }
            continue;
        }
        // Evidence: where it parts from the closest point of the turn (the earliest among equals).
        let same = |at: usize| fold.at(at).zip(carried).take_while(|(a, b)| a == *b).count();
        let closest = points.rev().max_by_key(|&at| same(at)).unwrap_or(users[turn].min(lines.len() - 1));
        let same = same(closest);
        let show = |item: Option<&Item>| item.map_or_else(|| "nothing".to_owned(), Item::to_string);
        problems.insert(
            n,
            format!(
                "request {n} parts from the Log's conversation at item {}: the Log has {}, the request has {}",
                same + 1,
                show(fold.at(closest).nth(same).as_ref()),
                show(carried.get(same))
            ),
        );
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::{assistant, body, capture, check, user};

    /// A call's arguments that parse as JSON but are no object: the Log keeps the model's text,
    /// the wire sends the same text, and both read as the array it parses to.
    #[test]
    fn arguments_that_parse_read_alike_in_the_log_and_on_the_wire() {
        let text = json!("[\"notes.md\"]");
        let logged = Line::parse(&format!(
            r#"{{"type":"tool_call","seq":2,"data":{{"call_id":"c1","name":"list","args":{text}}}}}"#
        ))
        .unwrap_or_else(|error| panic!("{error}"));
        let sent = Message::ToolCall { call_id: "c1".into(), name: "list".into(), args: text.clone() };
        assert_eq!(Some(super::call(&logged)), item(&sent));
        assert_eq!(parsed(&text).into_owned(), json!(["notes.md"]));
        assert_eq!(parsed(&json!("{\"path\": ")).into_owned(), json!("{\"path\": "));
    }

    fn log() -> Vec<(&'static str, Value)> {
        vec![
            ("user_message", json!({"text": "first"})),
            ("provider_usage", json!({})),
            ("assistant_message", json!({"text": "one"})),
            ("user_message", json!({"text": "second"})),
            ("provider_usage", json!({})),
            ("tool_call", json!({"call_id": "c1", "name": "list"})),
            ("tool_result", json!({"call_id": "c1", "ok": true, "output": ""})),
            ("provider_usage", json!({})),
            ("assistant_message", json!({"text": "two"})),
        ]
    }

    fn call(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "list", "arguments": "{}"})
    }

    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": ""})
    }

    #[test]
    fn a_call_with_other_arguments_or_a_result_with_other_output_is_caught() {
        let mut events = log();
        events[6] = ("tool_result", json!({"call_id": "c1", "ok": true, "output": "a.txt"}));
        let start = vec![user("first"), assistant("one"), user("second")];
        let with = |call: Value, output: Value| {
            let mut input = start.clone();
            input.extend([call, output]);
            [body(vec![user("first")]), body(start.clone()), body(input)]
        };
        let ok = with(call("c1"), json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"}));
        assert_eq!(check(INVARIANT, &capture(&events, &ok)), Vec::<String>::new());
        let wrong_output =
            with(call("c1"), json!({"type": "function_call_output", "call_id": "c1", "output": "xyzzy"}));
        assert_eq!(
            check(INVARIANT, &capture(&events, &wrong_output)),
            [
                "request 3 parts from the Log's conversation at item 5: the Log has result of `c1` \"a.txt\", the request has result of `c1` \"xyzzy\""
            ]
        );
        let wrong_args = with(
            json!({"type": "function_call", "call_id": "c1", "name": "list", "arguments": "{\"path\":\"..\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
        );
        assert_eq!(
            check(INVARIANT, &capture(&events, &wrong_args)),
            [
                "request 3 parts from the Log's conversation at item 4: the Log has nothing, the request has call `c1` of list with {\"path\":\"..\"}"
            ]
        );
    }

    /// Seed 000 makes folding a Subagent's summary a MAY: a request without it breaks only the
    /// reference's choice (issue 31).
    #[test]
    fn a_request_without_a_subagent_summary_differs_from_the_reference_only() {
        use crate::judge::fixture::{body, capture, check_as, user};
        let events = [
            ("user_message", json!({"text": "fan out"})),
            (
                "subagent_event",
                json!({"event": "finished", "status": "completed", "subagent_id": "sub_1", "agent": "w", "summary": "done"}),
            ),
            ("user_message", json!({"text": "next"})),
        ];
        let folded =
            capture(&events, &[body(vec![user("fan out"), user("Subagent sub_1 (w) completed: done"), user("next")])]);
        assert!(
            check_as(INVARIANT, INVARIANT.id, &folded).is_empty() && check_as(INVARIANT, REFERENCE, &folded).is_empty()
        );
        let unfolded = capture(&events, &[body(vec![user("fan out"), user("next")])]);
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &unfolded), Vec::<String>::new());
        assert_eq!(check_as(INVARIANT, REFERENCE, &unfolded).len(), 1);
        let lost = capture(&events, &[body(vec![user("next")])]);
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &lost).len(), 1, "the first prompt is still owed");
    }

    #[test]
    fn after_a_compaction_the_summary_stands_for_its_range() {
        let events = vec![
            ("user_message", json!({"text": "first"})),
            ("assistant_message", json!({"text": "one"})),
            ("user_message", json!({"text": "second"})),
            ("provider_usage", json!({})),
            (
                "history_compaction",
                json!({"range": {"from_seq": 0, "to_seq": 1}, "summary": "sum", "instruction": "Summarise"}),
            ),
            ("assistant_message", json!({"text": "two"})),
        ];
        let asked = body(vec![user("first"), assistant("one"), user("second"), user("Summarise")]);
        let start = [body(vec![user("first")]), body(vec![user("first"), assistant("one"), user("second")]), asked];
        let with = |last: Value| {
            let mut bodies = start.to_vec();
            bodies.push(last);
            check(INVARIANT, &capture(&events, &bodies))
        };
        assert_eq!(with(body(vec![user("Memory:\nsum"), user("second")])), Vec::<String>::new());
        // Asked for a summary, then sent the conversation as if nothing was compacted.
        assert_eq!(
            with(body(vec![user("first"), assistant("one"), user("second")])),
            [
                "request 4 parts from the Log's conversation at item 1: the Log has a message with the summary \"sum\", the request has user \"first\""
            ]
        );
        assert_eq!(
            with(body(vec![user("second")])),
            [
                "request 4 parts from the Log's conversation at item 1: the Log has a message with the summary \"sum\", the request has user \"second\""
            ]
        );
    }

    #[test]
    fn requests_carrying_the_fold_at_their_point_pass() {
        let bodies = [
            body(vec![user("first")]),
            body(vec![user("first"), assistant("one"), user("second")]),
            body(vec![user("first"), assistant("one"), user("second"), call("c1"), output("c1")]),
        ];
        assert_eq!(check(INVARIANT, &capture(&log(), &bodies)), Vec::<String>::new());
    }

    /// After two refused turns in a row, a request may carry them or leave out those before
    /// its own turn (the reference's shape: ACP v1's `refusal` leaves the conversation); a
    /// request that drops an answer that was not refused is still caught.
    #[test]
    fn refused_turns_may_be_carried_or_left_out() {
        let refused = json!({"text": "no", "metadata": {"output_truncation": {"status": "truncated", "reason": "content_filter"}}});
        let refusing = [
            ("user_message", json!({"text": "first"})),
            ("assistant_message", refused.clone()),
            ("user_message", json!({"text": "second"})),
            ("assistant_message", refused),
            ("user_message", json!({"text": "third"})),
        ];
        let left_out = [body(vec![user("first")]), body(vec![user("second")]), body(vec![user("third")])];
        assert_eq!(check(INVARIANT, &capture(&refusing, &left_out)), Vec::<String>::new());
        let kept = [
            body(vec![user("first")]),
            body(vec![user("first"), assistant("no"), user("second")]),
            body(vec![user("first"), assistant("no"), user("second"), assistant("no"), user("third")]),
        ];
        assert_eq!(check(INVARIANT, &capture(&refusing, &kept)), Vec::<String>::new());
        let answered = [
            body(vec![user("first")]),
            body(vec![user("first"), assistant("one"), user("second")]),
            body(vec![user("second")]),
        ];
        assert_eq!(check(INVARIANT, &capture(&log(), &answered[..2])), Vec::<String>::new());
        assert_eq!(check(INVARIANT, &capture(&log(), &answered)).len(), 1);
    }

    #[test]
    fn a_dropped_answer_a_dropped_prompt_or_an_extra_item_is_caught() {
        let bodies = [
            body(vec![]),
            body(vec![user("first"), user("second")]),
            body(vec![user("first"), assistant("one"), user("second"), call("c1"), output("c1"), user("usage: 10")]),
        ];
        assert_eq!(
            check(INVARIANT, &capture(&log(), &bodies)),
            [
                "request 1 carries none of the Session's user messages",
                "request 2 parts from the Log's conversation at item 2: the Log has assistant \"one\", the request has user \"second\"",
                "request 3 parts from the Log's conversation at item 6: the Log has nothing, the request has user \"usage: 10\"",
            ]
        );
    }
}
