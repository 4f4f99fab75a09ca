//! The Provider replay fold: History to Responses `input` items (ADR 0026 "Replay and cache
//! impact"; pixir.md 3.2, 3.3).
//!
//! Only conversation state is replayed: user messages, clean assistant messages, paired tool
//! calls and results, and same-model reasoning. Partial assistant text, `turn_failed`,
//! `provider_usage` and other audit-only events never reach the model (REPLAY-NO-PARTIAL,
//! REPLAY-AUDIT-ONLY). A call left without a result gets a synthetic output so every request
//! is balanced (REPLAY-TOOL-PAIRING).
//!
//! The latest `history_compaction` replaces the range it covers with its summary, one user
//! item where the range began (REPLAY-COMPACTION-SUMMARY); a call of the range whose result
//! comes after it is replayed beside that result, so no pair is split
//! (REPLAY-COMPACTION-KEEPS-PAIRS). A `branch_summary` is a user item where it stands
//! (REPLAY-BRANCH-SUMMARY); `session_fork` is lineage, never replayed (REPLAY-FORK-LINEAGE).
//!
//! A turn the model refused (its answer stopped by a content filter, which the ACP agent
//! answers `refusal`) leaves the conversation: ACP v1's `refusal` says "The user prompt and
//! everything that comes after it won't be included in the next prompt"
//! (ACP-REFUSAL-LEAVES-CONVERSATION).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::canonical;
use crate::event::{Event, EventType, LifecycleEvent};
use crate::resource::{self, Image, Link};

/// Folds History (Events in seq order) into `input` items for a request to `model`.
pub fn fold(history: &[Event], model: &str) -> Vec<Value> {
    let mut replay = Replay::new(model);
    let mut items = Vec::new();
    replay.advance(history, &mut |item| items.push(item));
    items.extend(replay.tail());
    items
}

/// The fold kept between requests. History only grows, so each request folds only the Events
/// recorded since the last one (a long conversation costs its new Events per request, not its
/// whole History); items it emits never change afterwards. Only the closing outputs of calls
/// still pending ([`Replay::tail`]) depend on where History stands.
#[derive(Debug, Clone)]
pub struct Replay {
    model: String,
    /// How many Events of History are folded.
    folded: usize,
    /// call_id -> tool name, for calls whose result has not been seen yet.
    pending: BTreeMap<String, String>,
    /// Calls the latest compaction covers whose result it does not: call_id -> (tool name, the
    /// call's item), replayed beside their result when it comes (REPLAY-COMPACTION-KEEPS-PAIRS).
    compacted: BTreeMap<String, (String, Value)>,
    /// The images attached in this process, by `sha256`: a `user_message` whose resources
    /// name one carries it (LOG-NO-RESOURCE-BYTES keeps the bytes out of History).
    images: BTreeMap<String, Image>,
    /// The seqs of the turns the model refused, found when the fold starts: never replayed.
    refused: BTreeSet<u64>,
}

impl Replay {
    /// A fold for requests to `model`, before any Event.
    pub fn new(model: &str) -> Replay {
        Replay {
            model: model.to_owned(),
            folded: 0,
            pending: BTreeMap::new(),
            compacted: BTreeMap::new(),
            images: BTreeMap::new(),
            refused: BTreeSet::new(),
        }
    }

    /// A fold for requests to `model` from the start of History, keeping the images attached.
    #[must_use]
    pub fn for_model(&self, model: &str) -> Replay {
        Replay { images: self.images.clone(), ..Replay::new(model) }
    }

    /// Keeps an image's bytes, for the `user_message` that names it.
    pub fn attach(&mut self, image: Image) {
        self.images.insert(image.sha256.clone(), image);
    }

    /// The model whose reasoning it replays.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Whether `history` gained a `history_compaction` or a refused answer since the last
    /// fold: the items emitted so far no longer hold, and the fold starts again from a new
    /// [`Replay`].
    pub fn rewritten_since(&self, history: &[Event]) -> bool {
        self.folded > 0
            && history
                .get(self.folded..)
                .unwrap_or_default()
                .iter()
                .any(|event| compaction_range(event).is_some() || refuses(event))
    }

    /// Folds the Events of `history` after the ones already folded, emitting each new item. The
    /// first fold of a History with compactions folds it around the latest one.
    pub fn advance(&mut self, history: &[Event], emit: &mut dyn FnMut(Value)) {
        if self.folded == 0 {
            self.refused = refused_turns(history);
        }
        if self.folded == 0
            && let Some(latest) = history.iter().rev().find(|event| compaction_range(event).is_some())
        {
            self.fold_compacted(history, latest, emit);
        } else {
            for event in history.get(self.folded..).unwrap_or_default() {
                self.fold_event(event, emit);
            }
        }
        self.folded = self.folded.max(history.len());
    }

    /// Folds `history` with the range of `compaction` replaced by its summary; other
    /// compactions are replayed only through the latest one's summary.
    fn fold_compacted(&mut self, history: &[Event], compaction: &Event, emit: &mut dyn FnMut(Value)) {
        let Some((from, to)) = compaction_range(compaction) else { return };
        let mut summarized = false;
        let summarize = |replay: &mut Replay, emit: &mut dyn FnMut(Value)| {
            close_orphans(&mut replay.pending, emit);
            emit(user_item(&compaction_text(compaction)));
        };
        for event in history {
            if event.kind() == EventType::HistoryCompaction {
                continue;
            }
            let seq = event.seq().unwrap_or_default();
            if seq < from {
                self.fold_event(event, emit);
                continue;
            }
            if !summarized {
                summarize(self, emit);
                summarized = true;
            }
            let call_id = event.str_field("call_id").unwrap_or_default();
            if seq <= to {
                match event.kind() {
                    EventType::ToolCall => {
                        let name = event.str_field("name").unwrap_or_default().to_owned();
                        self.compacted.insert(call_id.to_owned(), (name, call_item(event)));
                    }
                    EventType::ToolResult => {
                        self.compacted.remove(call_id);
                    }
                    _ => {}
                }
                continue;
            }
            self.fold_event(event, emit);
        }
        if !summarized {
            summarize(self, emit);
        }
    }

    /// The outputs that close the calls still pending, so a request is balanced
    /// (REPLAY-TOOL-PAIRING); a later Event may yet bring their real results.
    pub fn tail(&self) -> Vec<Value> {
        let mut items = Vec::new();
        close_orphans(&mut self.pending.clone(), &mut |item| items.push(item));
        items
    }

    fn fold_event(&mut self, event: &Event, emit: &mut dyn FnMut(Value)) {
        if event.seq().is_some_and(|seq| self.refused.contains(&seq)) {
            return;
        }
        let pending = &mut self.pending;
        let data = event.data();
        match event.kind() {
            EventType::ToolCall => {
                let call_id = event.str_field("call_id").unwrap_or_default();
                let name = event.str_field("name").unwrap_or_default();
                emit(call_item(event));
                pending.insert(call_id.to_owned(), name.to_owned());
            }
            EventType::ToolResult => self.fold_tool_result(event, emit),
            // A terminal Subagent summary is model-visible, unless it was recorded while a
            // call was pending (SUB-REPLAY-TERMINAL-ONLY).
            EventType::SubagentEvent => {
                if pending.is_empty()
                    && let Some(text) = subagent_summary(event)
                {
                    emit(user_item(&text));
                }
            }
            // Transparent while a call is pending, and never model input themselves.
            EventType::ProviderUsage | EventType::PermissionDecision | EventType::WorkflowEvent => {}
            EventType::UserMessage => self.fold_user_message(event, emit),
            // A fork's summary of its parent's prefix is conversation where it stands.
            EventType::BranchSummary => {
                close_orphans(pending, emit);
                emit(user_item(&summary_text(event)));
            }
            EventType::AssistantMessage => {
                close_orphans(pending, emit);
                // An empty answer (the model said nothing) says nothing to replay either, and an
                // empty text block is one a Provider may refuse (Anthropic does).
                let text = event.str_field("text").unwrap_or_default();
                if !event.is_partial_assistant() && !text.is_empty() {
                    emit(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
            }
            EventType::Reasoning => {
                close_orphans(pending, emit);
                if event.str_field("model") == Some(self.model.as_str())
                    && let Some(item) = data.get("item")
                {
                    emit(item.clone());
                }
            }
            _ => close_orphans(pending, emit),
        }
    }
    /// A tool result: its call first when compaction held the call back, then its output if
    /// the call is still pending.
    fn fold_tool_result(&mut self, event: &Event, emit: &mut dyn FnMut(Value)) {
        let call_id = event.str_field("call_id").unwrap_or_default();
        if let Some((name, item)) = self.compacted.remove(call_id) {
            emit(item);
            self.pending.insert(call_id.to_owned(), name);
        }
        if self.pending.remove(call_id).is_some() {
            emit(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": tool_output(event),
            }));
        }
    }

    /// A user message, after closing the calls still pending, with its attached images.
    fn fold_user_message(&mut self, event: &Event, emit: &mut dyn FnMut(Value)) {
        close_orphans(&mut self.pending, emit);
        let mut item = user_item(&prompt_text(event));
        // Each attached image whose bytes this process holds, as a Responses
        // `input_image`; each dialect converts it to its own form.
        let data = event.data();
        let resources = data.get("resources").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let images = resources
            .iter()
            .filter_map(|resource| self.images.get(resource.get("sha256")?.as_str()?))
            .map(|image| json!({"type": "input_image", "image_url": image.data_url()}));
        if let Some(content) = item.get_mut("content").and_then(Value::as_array_mut) {
            content.extend(images);
        }
        emit(item);
    }
}

/// An answer a content filter stopped: the model refused the turn.
fn refuses(event: &Event) -> bool {
    event.kind() == EventType::AssistantMessage
        && !event.is_partial_assistant()
        && event.data().get("metadata").and_then(|metadata| metadata.pointer("/output_truncation/reason"))
            == Some(&json!("content_filter"))
}

/// The seqs of every Event of the turns `history` holds a refused answer in: from the turn's
/// user message to the next one.
fn refused_turns(history: &[Event]) -> BTreeSet<u64> {
    let mut refused = BTreeSet::new();
    let mut turn: Vec<u64> = Vec::new();
    let mut turn_refused = false;
    for event in history {
        if event.kind() == EventType::UserMessage {
            if turn_refused {
                refused.extend(turn.drain(..));
            }
            turn.clear();
            turn_refused = false;
        }
        turn.extend(event.seq());
        turn_refused |= refuses(event);
    }
    if turn_refused {
        refused.extend(turn);
    }
    refused
}

/// What the model reads of a user message: its text, then each resource it points at as a
/// Markdown link, a line each (ACP-PROMPT-LINK-CARRIED).
fn prompt_text(event: &Event) -> String {
    let text = event.str_field("text").unwrap_or_default();
    std::iter::once(text.to_owned())
        .chain(resource::links(event.data()).iter().map(Link::markdown))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A user message item.
fn user_item(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// A `tool_call` as the model made it, its arguments re-encoded with sorted keys, or the
/// model's own text when they were not a JSON object (`OutputItem::call`).
fn call_item(event: &Event) -> Value {
    let arguments = match event.data().get("args") {
        Some(Value::String(text)) => text.clone(),
        Some(args) => canonical::to_string(args),
        None => "{}".to_owned(),
    };
    json!({
        "type": "function_call",
        "call_id": event.str_field("call_id").unwrap_or_default(),
        "name": event.str_field("name").unwrap_or_default(),
        "arguments": arguments,
    })
}

/// The `range {from_seq, to_seq}` of a `history_compaction`; `None` for any other Event or a
/// compaction without a valid range, which then replaces nothing.
pub fn compaction_range(event: &Event) -> Option<(u64, u64)> {
    if event.kind() != EventType::HistoryCompaction {
        return None;
    }
    let range = event.data().get("range")?;
    let from = range.get("from_seq")?.as_u64()?;
    let to = range.get("to_seq")?.as_u64()?;
    (from <= to).then_some((from, to))
}

/// The replayed text of a `history_compaction` (pixir.md 3.2): `Compressed session memory`, its
/// range and strategy, then the summary and the lists the record carries.
pub fn compaction_text(event: &Event) -> String {
    format!("Compressed session memory\n{}", summary_body(event))
}

/// The replayed text of a `branch_summary` (pixir.md 3.2), laid out like a compaction's.
fn summary_text(event: &Event) -> String {
    let parent = event.str_field("parent_session_id").unwrap_or("unknown");
    format!("Branch summary from forked parent prefix\nParent: {parent}\n{}", summary_body(event))
}

fn summary_body(event: &Event) -> String {
    let data = event.data();
    let seq = |key: &str| data.get("range").and_then(|range| range.get(key)).and_then(Value::as_u64);
    let mut text = match (seq("from_seq"), seq("to_seq")) {
        (Some(from), Some(to)) => {
            let count = data.get("source_event_count").and_then(Value::as_u64).unwrap_or(to.saturating_sub(from) + 1);
            format!("Range: seq {from}..{to} ({count} events)\n")
        }
        _ => String::new(),
    };
    text.push_str(&format!("Strategy: {}\n\nSummary:\n", event.str_field("strategy").unwrap_or("unknown")));
    text.push_str(event.str_field("summary").unwrap_or_default());
    for (key, title) in
        [("files_touched", "Files touched"), ("open_tasks", "Open tasks"), ("limitations", "Limitations")]
    {
        let Some(list) = data.get(key).and_then(Value::as_array) else { continue };
        text.push_str(&format!("\n\n{title}:"));
        let bullets: Vec<String> = list
            .iter()
            .take(20)
            .map(|entry| entry.as_str().map_or_else(|| canonical::to_string(entry), str::to_owned))
            .collect();
        if bullets.is_empty() {
            text.push_str("\n- none");
        }
        for bullet in bullets {
            text.push_str(&format!("\n- {bullet}"));
        }
    }
    text
}

/// The replay line of a terminal `subagent_event` (pixir.md 3.2):
/// `Subagent <id> (<agent>) <status>: <summary>`; `None` for lifecycle events that are not
/// replayed (`queued`, `started`, `closed`, `detached`).
pub fn subagent_summary(event: &Event) -> Option<String> {
    let lifecycle = event.str_field("event").and_then(LifecycleEvent::parse)?;
    if !lifecycle.is_replayed() {
        return None;
    }
    Some(format!(
        "Subagent {} ({}) {}: {}",
        event.str_field("subagent_id")?,
        event.str_field("agent").unwrap_or("default"),
        lifecycle.status(),
        event.str_field("summary").unwrap_or_default()
    ))
}

/// A `tool_result`'s output as the model sees it: the string `output`, or the JSON of the
/// result without its `call_id`.
fn tool_output(event: &Event) -> String {
    if let Some(output) = event.str_field("output") {
        return output.to_owned();
    }
    let mut data = event.data().clone();
    data.remove("call_id");
    canonical::to_string(&data)
}

fn close_orphans(pending: &mut BTreeMap<String, String>, emit: &mut dyn FnMut(Value)) {
    for (call_id, tool) in std::mem::take(pending) {
        let output = json!({
            "ok": false,
            "error": {
                "kind": "orphan_tool_call",
                "message": "replay found a tool_call without a matching tool_result",
                "details": {"call_id": call_id, "tool": tool},
            },
        });
        emit(json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": canonical::to_string(&output),
        }));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::event::{Data, ErrorKind, Payload, Prompt, TerminalStatus};

    /// History of `payloads`, seq from 0.
    pub(crate) fn history(payloads: Vec<Payload>) -> Vec<Event> {
        payloads
            .into_iter()
            .enumerate()
            .map(|(seq, payload)| Event::stamp(payload, "s", format!("{seq}"), "t".into(), Some(seq as u64)))
            .collect()
    }

    fn ok(output: &str) -> Data {
        let mut data = Data::new();
        data.insert("ok".into(), json!(true));
        data.insert("output".into(), json!(output));
        data
    }

    #[test]
    fn a_prompts_image_is_replayed_while_the_process_holds_its_bytes() {
        let image = Image::from_base64("image/png", "iVBORw0KGgo=").unwrap();
        let events = history(vec![Payload::user_message_of(&Prompt {
            text: "look".into(),
            images: vec![image.clone()],
            ..Prompt::default()
        })]);
        let mut replay = Replay::new("m");
        replay.attach(image.clone());
        let mut items = Vec::new();
        replay.for_model("m2").advance(&events, &mut |item| items.push(item));
        assert_eq!(
            items,
            [json!({"role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ]})]
        );
        // Without the bytes (a store that lost them), the text is replayed alone.
        assert_eq!(fold(&events, "m"), [json!({"role": "user", "content": [{"type": "input_text", "text": "look"}]})]);
    }

    /// A prompt's links reach the model as Markdown links after its text, a line each.
    #[test]
    fn a_prompts_links_are_replayed_after_its_text() {
        let link = crate::resource::Link { uri: "https://e.com/a.md".into(), name: "a.md".into() };
        let events = history(vec![Payload::user_message_of(&Prompt {
            text: "read".into(),
            links: vec![link],
            ..Prompt::default()
        })]);
        assert_eq!(
            fold(&events, "m"),
            [json!({"role": "user", "content": [{"type": "input_text", "text": "read\n[a.md](https://e.com/a.md)"}]})]
        );
    }

    #[test]
    fn replays_clean_conversation_and_drops_audit_evidence() {
        let events = history(vec![
            Payload::user_message("one"),
            Payload::provider_usage(Data::new()),
            Payload::assistant_message("clean", Data::new()),
            Payload::user_message("two"),
            Payload::partial_assistant_message("half", TerminalStatus::PartialFailed, ErrorKind::Network, "m"),
            Payload::turn_failed(TerminalStatus::PartialFailed, ErrorKind::Network, "m", Data::new()),
        ]);
        let items = fold(&events, "m1");
        let text = serde_json::to_string(&items).unwrap_or_default();
        assert_eq!(items.len(), 3);
        assert!(text.contains("clean") && !text.contains("half"));
        assert!(!text.contains("turn_failed") && !text.contains("network"));
    }

    #[test]
    fn pairs_tool_calls_and_closes_orphans() {
        let events = history(vec![
            Payload::user_message("go"),
            Payload::tool_call("c1", "read", json!({"path": "a"})),
            Payload::tool_result("c1", ok("A")),
            Payload::tool_call("c2", "read", json!({"path": "b"})),
            Payload::user_message("next"),
        ]);
        let items = fold(&events, "m1");
        let kinds: Vec<_> = items.iter().map(|i| i["type"].as_str().unwrap_or("role")).collect();
        assert_eq!(
            kinds,
            ["role", "function_call", "function_call_output", "function_call", "function_call_output", "role"]
        );
        assert_eq!(items[2]["output"], "A");
        assert!(items[4]["output"].as_str().unwrap_or_default().contains("orphan_tool_call"));
    }

    #[test]
    fn only_terminal_subagent_summaries_outside_pending_calls_replay() {
        let lifecycle = |event: &str, status: &str| {
            let data = json!({"event": event, "status": status, "subagent_id": "sub_1", "agent": "worker", "summary": "Found it"});
            let Value::Object(data) = data else { unreachable!() };
            Payload::subagent_event(data)
        };
        let events = history(vec![
            Payload::user_message("go"),
            Payload::tool_call("c1", "spawn_agent", json!({"task": "t"})),
            lifecycle("queued", "queued"),
            lifecycle("finished", "completed"),
            Payload::tool_result("c1", ok("spawned")),
            lifecycle("started", "running"),
            lifecycle("finished", "completed"),
            lifecycle("detached", "detached"),
        ]);
        let items = fold(&events, "m1");
        let texts: Vec<_> = items.iter().filter_map(|item| item.pointer("/content/0/text")).collect();
        assert_eq!(texts, [&json!("go"), &json!("Subagent sub_1 (worker) completed: Found it")]);
    }

    /// Folding History as it grows, Event by Event, emits the items of folding it whole, and
    /// the tail closes exactly the calls still pending at each point.
    #[test]
    fn folding_as_history_grows_is_folding_it_whole() {
        let events = history(vec![
            Payload::user_message("go"),
            Payload::reasoning(json!({"id": "rs_1"}), "m1"),
            Payload::tool_call("c1", "read", json!({"path": "a"})),
            Payload::provider_usage(Data::new()),
            Payload::tool_result("c1", ok("A")),
            Payload::tool_call("c2", "read", json!({"path": "b"})),
            Payload::assistant_message("half", Data::new()),
            Payload::tool_call("c3", "read", json!({})),
            Payload::user_message("next"),
        ]);
        let mut replay = Replay::new("m1");
        let mut items = Vec::new();
        for end in 0..=events.len() {
            replay.advance(&events[..end], &mut |item| items.push(item));
            let mut now = items.clone();
            now.extend(replay.tail());
            assert_eq!(now, fold(&events[..end], "m1"), "after {end} events");
        }
    }

    fn compaction(from: u64, to: u64, summary: &str) -> Payload {
        let data = json!({"range": {"from_seq": from, "to_seq": to}, "strategy": "s", "summary": summary});
        Payload::history_compaction(crate::event::object(data))
    }

    fn texts(items: &[Value]) -> Vec<String> {
        items
            .iter()
            .map(|item| {
                item.pointer("/content/0/text")
                    .and_then(Value::as_str)
                    .map_or_else(|| item["type"].as_str().unwrap_or_default().to_owned(), str::to_owned)
            })
            .collect()
    }

    /// The latest compaction's summary stands where its range began; a call of the range whose
    /// result comes after it is carried beside that result; folding as History grows agrees.
    #[test]
    fn the_latest_compaction_replaces_its_range_and_keeps_split_pairs() {
        let events = history(vec![
            Payload::user_message("one"),
            Payload::assistant_message("a", Data::new()),
            Payload::user_message("two"),
            Payload::tool_call("c1", "read", json!({"path": "a"})),
            compaction(0, 1, "old"),
            compaction(0, 3, "sum"),
            Payload::tool_result("c1", ok("A")),
            Payload::assistant_message("b", Data::new()),
            Payload::user_message("three"),
        ]);
        let items = fold(&events, "m1");
        let summary = "Compressed session memory\nRange: seq 0..3 (4 events)\nStrategy: s\n\nSummary:\nsum";
        assert_eq!(texts(&items), [summary, "function_call", "function_call_output", "b", "three"]);
        kept_fold_agrees(&events);
    }

    /// The fold kept between requests, started again whenever History is rewritten, emits
    /// after every Event what a fresh fold of History so far does.
    fn kept_fold_agrees(events: &[Event]) {
        let mut replay = Replay::new("m1");
        let mut grown = Vec::new();
        for end in 0..=events.len() {
            if replay.rewritten_since(&events[..end]) {
                replay = Replay::new("m1");
                grown.clear();
            }
            replay.advance(&events[..end], &mut |item| grown.push(item));
            let mut now = grown.clone();
            now.extend(replay.tail());
            assert_eq!(now, fold(&events[..end], "m1"), "after {end} events");
        }
    }

    /// A refused turn leaves the conversation, as ACP v1's `refusal` says; the fold kept
    /// between requests starts again when the refusal is recorded, and agrees with a fresh one.
    #[test]
    fn a_refused_turn_leaves_the_conversation() {
        let mut filtered = Data::new();
        filtered.insert("output_truncation".into(), json!({"status": "truncated", "reason": "content_filter"}));
        let events = history(vec![
            Payload::user_message("one"),
            Payload::assistant_message("a", Data::new()),
            Payload::user_message("forbidden"),
            Payload::assistant_message("I can't help", filtered),
            Payload::user_message("two"),
        ]);
        assert_eq!(texts(&fold(&events, "m1")), ["one", "a", "two"]);
        kept_fold_agrees(&events);
    }

    #[test]
    fn a_branch_summary_replays_where_it_stands_and_a_fork_never() {
        let mut summary = Data::new();
        summary.insert("summary".into(), json!("parent work"));
        summary.insert("parent_session_id".into(), json!("p"));
        let fork = Payload::session_fork(crate::event::object(json!({"parent_session_id": "p"})));
        let events = history(vec![fork, Payload::branch_summary(summary), Payload::user_message("go")]);
        let items = fold(&events, "m1");
        assert_eq!(texts(&items).len(), 2);
        assert!(texts(&items)[0].starts_with("Branch summary from forked parent prefix\nParent: p\n"));
        assert!(texts(&items)[0].ends_with("Summary:\nparent work"));
    }

    #[test]
    fn reasoning_replays_only_for_its_model() {
        let events = history(vec![Payload::user_message("q"), Payload::reasoning(json!({"id": "rs_1"}), "m1")]);
        assert_eq!(fold(&events, "m1").len(), 2);
        assert_eq!(fold(&events, "m2").len(), 1);
    }
}
