//! `thread/read` to a normalized snapshot (ADR-012 "Decisions", part B.1 and B.2.1 to B.2.3).
//!
//! A `final_answer` item is terminal evidence unless the same snapshot waits on approval or a reply,
//! so a stale `inProgress` status or `activeTurnId` cannot keep a finished turn looking active.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fingerprint::fingerprint;
use super::render::{choice_options, clean_tool_text, first_string, map_string, render_command};
use super::status::{WaitingFlag, has_flag, is_terminal, looks_live, status_text, turn_marks_active};

/// How many agent message entries a snapshot keeps, newest first.
const MAX_ENTRIES: usize = 3;

/// The question of a synthetic prompt when the turn asks nothing recognisable.
const DEFAULT_QUESTION: &str = "Input required.";

/// One agent message or plan of the latest turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Entry {
    /// The item id.
    pub id: String,
    /// `commentary`, `final_answer`, `plan`, or `""` for a legacy message without a phase.
    pub phase: String,
    /// The trimmed text.
    pub text: String,
    /// `fingerprint(type, id, phase, text)`, or `fingerprint(type, id, text)` without a phase.
    pub fp: String,
}

/// The latest tool item of the turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tool {
    /// The item id.
    pub id: String,
    /// The item type (`commandExecution`, `fileChange`, `dynamicToolCall`, `mcpToolCall`, `webSearch`).
    pub kind: String,
    /// What the tool does, nil-safe; never `"{}"` or `"<nil>"`.
    pub label: String,
    /// The item status.
    pub status: String,
    /// The output, trimmed.
    pub output: String,
    /// `fingerprint("tool", id, kind, label, status, output)`.
    pub fp: String,
}

/// The prompt a waiting-on-reply snapshot synthesizes, so the operator can answer from Telegram.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanPrompt {
    /// Always `synthetic_poll` here.
    pub source: String,
    /// The turn that waits.
    pub turn_id: String,
    /// The newest plan text, else the newest agent question, else `"Input required."`; never the stale preview.
    pub question: String,
    /// The newest plan's choices.
    pub options: Vec<String>,
    /// `fingerprint("plan_prompt", turn_id, question, options joined by newlines)`.
    pub fingerprint: String,
    /// Always `waiting for input`.
    pub status: String,
}

/// The kind of one detail line, in item order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetailKind {
    /// A user message.
    User,
    /// A commentary (or legacy non-final) agent message.
    Commentary,
    /// A plan item.
    Plan,
    /// A tool call.
    Tool,
    /// A tool's output.
    Output,
    /// The final answer.
    Final,
}

/// The normalized view of one `thread/read` (upstream `ThreadReadSnapshot`), in the bridge's vocabulary.
///
/// The same fields describe a snapshot given directly to the terminal gate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Snapshot {
    /// `id` or `threadId`.
    pub thread_id: String,
    /// `name`, `title`, else the id.
    pub thread_title: String,
    /// `cwd`.
    pub thread_cwd: String,
    /// The thread status text, after normalization.
    pub thread_status: String,
    /// The active turn, after normalization.
    pub active_turn_id: String,
    /// The last turn's id.
    pub latest_turn_id: String,
    /// The last turn's status text, after normalization.
    pub latest_turn_status: String,
    /// A `waitingOnApproval` flag on the thread or the turn.
    pub waiting_on_approval: bool,
    /// A `waitingOnUserInput` or `waitingOnInput` flag on the thread or the turn.
    pub waiting_on_reply: bool,
    /// The final answer's text.
    pub final_text: String,
    /// The final answer's fingerprint.
    pub final_fp: String,
    /// The newest progress line: a non-final message or a tool label.
    pub progress_text: String,
    /// `fingerprint("progress", progress_text)`.
    pub progress_fp: String,
    /// The newest user message's id.
    pub user_message_id: String,
    /// The newest user message's text.
    pub user_message_text: String,
    /// `fingerprint("userMessage", id, text)`.
    pub user_message_fp: String,
    /// Agent messages and plans, newest first, at most three.
    pub entries: Vec<Entry>,
    /// The newest tool item.
    pub tool: Option<Tool>,
    /// The synthetic prompt when waiting on a reply.
    pub plan_prompt: Option<PlanPrompt>,
    /// Detail kinds in item order.
    pub detail_kinds: Vec<DetailKind>,
    /// `fingerprint(turn_id, status)` when the turn status is terminal, else `""`.
    pub completion_fp: String,
}

impl Snapshot {
    /// Whether the snapshot carries any final evidence (text, fingerprint, entry or detail).
    pub fn has_final_signal(&self) -> bool {
        !self.final_text.is_empty()
            || !self.final_fp.is_empty()
            || self.entries.iter().any(|entry| entry.phase == "final_answer")
            || self.detail_kinds.contains(&DetailKind::Final)
    }

    /// Whether anything but the user's own message is in the snapshot.
    pub fn has_meaningful_signal(&self) -> bool {
        self.has_final_signal()
            || !self.progress_text.is_empty()
            || !self.progress_fp.is_empty()
            || self.tool.as_ref().is_some_and(|tool| *tool != Tool::default())
            || !self.entries.is_empty()
            || self.detail_kinds.iter().any(|kind| *kind != DetailKind::User)
    }
}

/// One item of the latest turn, reduced to what the snapshot needs.
enum Item {
    User { id: String, text: String },
    Message { id: String, kind: &'static str, phase: String, text: String, options: Vec<String> },
    Tool(Tool),
}

/// `SnapshotFromThreadRead`: the nested `{"thread": ...}` form wins over the flat one; `null` is an empty snapshot.
pub fn from_thread_read(result: &Value) -> Snapshot {
    let thread = match result.get("thread") {
        Some(Value::Object(thread)) => thread,
        _ => match result {
            Value::Object(thread) => thread,
            _ => return Snapshot::default(),
        },
    };
    let mut snapshot = Snapshot {
        thread_id: first_string(thread, &["id", "threadId"]),
        thread_cwd: map_string(thread, "cwd"),
        thread_status: status_text(thread.get("status")),
        active_turn_id: map_string(thread, "activeTurnId"),
        ..Snapshot::default()
    };
    snapshot.thread_title = first_string(thread, &["name", "title"]);
    if snapshot.thread_title.is_empty() {
        snapshot.thread_title = snapshot.thread_id.clone();
    }
    let latest_turn = thread.get("turns").and_then(Value::as_array).and_then(|turns| turns.last());
    let empty = Map::new();
    let turn = latest_turn.and_then(Value::as_object).unwrap_or(&empty);
    snapshot.latest_turn_id = map_string(turn, "id");
    snapshot.latest_turn_status = status_text(turn.get("status"));
    if snapshot.active_turn_id.is_empty() && turn_marks_active(&snapshot.latest_turn_status) {
        snapshot.active_turn_id = snapshot.latest_turn_id.clone();
    }
    for flag in [WaitingFlag::Approval, WaitingFlag::Reply] {
        let waiting = has_flag(&snapshot.thread_status, flag) || has_flag(&snapshot.latest_turn_status, flag);
        match flag {
            WaitingFlag::Approval => snapshot.waiting_on_approval = waiting,
            WaitingFlag::Reply => snapshot.waiting_on_reply = waiting,
        }
    }
    let items: Vec<Item> = turn
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(item).collect())
        .unwrap_or_default();
    fill_from_items(&mut snapshot, &items);
    normalize_finalized_turn(&mut snapshot);
    snapshot.completion_fp = completion_fp(&snapshot.latest_turn_id, &snapshot.latest_turn_status);
    snapshot
}

/// `fingerprint(turn, status)` for a terminal turn, else `""`.
pub fn completion_fp(turn_id: &str, status: &str) -> String {
    if turn_id.is_empty() || !is_terminal(status) { String::new() } else { fingerprint(&[turn_id, status]) }
}

/// The text of a message item: `text`, else its `content[].text` joined by newlines; trimmed.
fn item_text(map: &Map<String, Value>, keys: &[&str]) -> String {
    let direct = first_string(map, keys);
    if !direct.is_empty() {
        return direct;
    }
    let parts: Vec<String> = map
        .get("content")
        .and_then(Value::as_array)
        .map(|content| {
            content
                .iter()
                .filter_map(Value::as_object)
                .map(|part| map_string(part, "text"))
                .filter(|text| !text.is_empty())
                .collect()
        })
        .unwrap_or_default();
    parts.join("\n").trim().to_owned()
}

fn item(value: &Value) -> Option<Item> {
    let map = value.as_object()?;
    let id = map_string(map, "id");
    let kind = map_string(map, "type");
    let tool = |tool_kind: &str, label: String, output: String| {
        let status = map_string(map, "status");
        let fp = fingerprint(&["tool", &id, tool_kind, &label, &status, &output]);
        Item::Tool(Tool { id: id.clone(), kind: tool_kind.to_owned(), label, status, output, fp })
    };
    match kind.as_str() {
        "userMessage" => Some(Item::User { text: item_text(map, &["text"]), id }),
        "agentMessage" => Some(Item::Message {
            text: item_text(map, &["text"]),
            phase: map_string(map, "phase"),
            kind: "agentMessage",
            options: Vec::new(),
            id,
        }),
        "plan" => Some(Item::Message {
            text: item_text(map, &["text", "plan"]),
            phase: "plan".to_owned(),
            kind: "plan",
            options: choice_options(value),
            id,
        }),
        "commandExecution" => Some(tool(
            "commandExecution",
            map.get("command").map(render_command).unwrap_or_default(),
            clean_tool_text(&first_string(map, &["aggregatedOutput", "output", "stdout", "stderr"])),
        )),
        "fileChange" => Some(tool("fileChange", clean_tool_text(&map_string(map, "path")), String::new())),
        "dynamicToolCall" | "mcpToolCall" => {
            Some(tool(&kind, clean_tool_text(&first_string(map, &["tool", "name", "namespace"])), String::new()))
        }
        "webSearch" => Some(tool("webSearch", clean_tool_text(&first_string(map, &["query", "text"])), String::new())),
        _ => None,
    }
}

fn entry_fp(kind: &str, id: &str, phase: &str, text: &str) -> String {
    if phase.is_empty() { fingerprint(&[kind, id, text]) } else { fingerprint(&[kind, id, phase, text]) }
}

/// Entries, final answer (B.2.2), tool, progress, details and the synthetic prompt.
fn fill_from_items(snapshot: &mut Snapshot, items: &[Item]) {
    let messages: Vec<(usize, &Item)> =
        items.iter().enumerate().filter(|(_, item)| matches!(item, Item::Message { .. })).collect();
    let any_phase = messages.iter().any(|(_, item)| matches!(item, Item::Message { phase, .. } if !phase.is_empty()));
    let final_idx = messages.iter().rev().find_map(|(idx, item)| match item {
        Item::Message { phase, text, .. } if any_phase && phase == "final_answer" && !text.is_empty() => Some(*idx),
        Item::Message { text, .. } if !any_phase && !text.is_empty() => Some(*idx),
        _ => None,
    });
    for (idx, item) in items.iter().enumerate() {
        match item {
            Item::User { id, text } => {
                snapshot.detail_kinds.push(DetailKind::User);
                snapshot.user_message_fp = fingerprint(&["userMessage", id, text]);
                snapshot.user_message_id = id.clone();
                snapshot.user_message_text = text.clone();
            }
            Item::Message { id, kind, phase, text, .. } => {
                if text.is_empty() {
                    continue;
                }
                let fp = entry_fp(kind, id, phase, text);
                if Some(idx) == final_idx {
                    snapshot.detail_kinds.push(DetailKind::Final);
                    snapshot.final_text = text.clone();
                    snapshot.final_fp = fp.clone();
                } else if phase == "plan" {
                    snapshot.detail_kinds.push(DetailKind::Plan);
                } else {
                    snapshot.detail_kinds.push(DetailKind::Commentary);
                    snapshot.progress_text = text.clone();
                }
                snapshot.entries.push(Entry { id: id.clone(), phase: phase.clone(), text: text.clone(), fp });
            }
            Item::Tool(tool) => {
                snapshot.detail_kinds.push(DetailKind::Tool);
                if !tool.output.is_empty() {
                    snapshot.detail_kinds.push(DetailKind::Output);
                }
                if !tool.label.is_empty() {
                    snapshot.progress_text = tool.label.clone();
                }
                snapshot.tool = Some(tool.clone());
            }
        }
    }
    // Newest first: reversed once here rather than inserted at the front for every message.
    snapshot.entries.reverse();
    snapshot.entries.truncate(MAX_ENTRIES);
    if !snapshot.progress_text.is_empty() {
        snapshot.progress_fp = fingerprint(&["progress", &snapshot.progress_text]);
    }
    if snapshot.waiting_on_reply {
        snapshot.plan_prompt = Some(synthetic_prompt(&snapshot.latest_turn_id, items));
    }
}

fn synthetic_prompt(turn_id: &str, items: &[Item]) -> PlanPrompt {
    let newest_plan = items.iter().rev().find_map(|item| match item {
        Item::Message { kind: "plan", text, options, .. } if !text.is_empty() => Some((text.clone(), options.clone())),
        _ => None,
    });
    let (question, options) = newest_plan
        .or_else(|| {
            items.iter().rev().find_map(|item| match item {
                Item::Message { kind: "agentMessage", text, .. } if text.contains('?') => {
                    Some((text.clone(), Vec::new()))
                }
                _ => None,
            })
        })
        .unwrap_or_else(|| (DEFAULT_QUESTION.to_owned(), Vec::new()));
    let fingerprint = fingerprint(&["plan_prompt", turn_id, &question, &options.join("\n")]);
    PlanPrompt {
        source: "synthetic_poll".to_owned(),
        turn_id: turn_id.to_owned(),
        question,
        options,
        fingerprint,
        status: "waiting for input".to_owned(),
    }
}

/// `normalizeFinalizedTurn` (B.2.3): a final answer completes a turn that is not waiting on anyone.
///
/// An `interrupted` turn with a final stays `interrupted`; the terminal gate judges it.
pub fn normalize_finalized_turn(snapshot: &mut Snapshot) {
    if snapshot.final_fp.is_empty() || snapshot.waiting_on_approval || snapshot.waiting_on_reply {
        return;
    }
    if !is_terminal(&snapshot.latest_turn_status) {
        snapshot.latest_turn_status = "completed".to_owned();
    }
    if snapshot.active_turn_id.trim() == snapshot.latest_turn_id.trim() {
        snapshot.active_turn_id.clear();
    }
    if looks_live(&snapshot.thread_status) || snapshot.thread_status.is_empty() {
        snapshot.thread_status = "completed".to_owned();
    }
}

/// The stored per-thread snapshot state (upstream `ThreadSnapshotState`), as `CompactSnapshot` leaves it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnapshotState {
    /// The thread status last stored.
    pub last_seen_thread_status: String,
    /// The turn last stored.
    pub last_seen_turn_id: String,
    /// That turn's status.
    pub last_seen_turn_status: String,
    /// The progress fingerprint last stored.
    pub last_progress_fp: String,
    /// The final fingerprint last stored.
    pub last_final_fp: String,
    /// `fingerprint(turn, status)` once the stored turn is terminal, else `""`.
    pub last_completion_fp: String,
    /// The synthetic prompt fingerprint last stored.
    pub last_reply_fp: String,
    /// When the observer polls this thread next.
    pub next_poll_after_ms: Option<u64>,
    /// The label of the tool the panel shows.
    pub tool_label: String,
    /// Its status.
    pub tool_status: String,
    /// Whether that tool came from a live event and is still running (a `thread/read` never sets this).
    pub tool_live_current: bool,
}

/// `CompactSnapshot`: the state to store for a snapshot that the gate let through.
pub fn compact(snapshot: &Snapshot, next_poll_after_ms: Option<u64>) -> SnapshotState {
    let tool = snapshot.tool.clone().unwrap_or_default();
    SnapshotState {
        last_seen_thread_status: snapshot.thread_status.clone(),
        last_seen_turn_id: snapshot.latest_turn_id.clone(),
        last_seen_turn_status: snapshot.latest_turn_status.clone(),
        last_progress_fp: snapshot.progress_fp.clone(),
        last_final_fp: snapshot.final_fp.clone(),
        last_completion_fp: snapshot.completion_fp.clone(),
        last_reply_fp: snapshot.plan_prompt.as_ref().map(|prompt| prompt.fingerprint.clone()).unwrap_or_default(),
        next_poll_after_ms,
        tool_label: tool.label,
        tool_status: tool.status,
        tool_live_current: false,
    }
}

/// What changed between the stored state and a new snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    /// A turn the state has not seen.
    TurnStarted,
    /// A terminal turn whose completion fingerprint is new.
    TurnCompleted,
    /// A live `final_answer` item (live notifications only).
    FinalAnswer,
}

/// One observer event of `DiffSnapshot` (the turn lifecycle subset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffEvent {
    /// What changed.
    pub kind: DiffKind,
    /// The turn.
    pub turn_id: String,
    /// The turn status in the new snapshot.
    pub status: String,
}

/// `DiffSnapshot`, turn lifecycle only: a new turn starts, a new completion fingerprint completes it.
pub fn diff(previous: &SnapshotState, snapshot: &Snapshot) -> Vec<DiffEvent> {
    let mut events = Vec::new();
    let event = |kind| DiffEvent {
        kind,
        turn_id: snapshot.latest_turn_id.clone(),
        status: snapshot.latest_turn_status.clone(),
    };
    if !snapshot.latest_turn_id.is_empty() && snapshot.latest_turn_id != previous.last_seen_turn_id {
        events.push(event(DiffKind::TurnStarted));
    }
    if !snapshot.completion_fp.is_empty() && snapshot.completion_fp != previous.last_completion_fp {
        events.push(event(DiffKind::TurnCompleted));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(thread_status: Value, turn_status: Value, items: Value) -> Snapshot {
        from_thread_read(&json!({"thread": {
            "id": "thread-1", "status": thread_status, "activeTurnId": "turn-1",
            "turns": [{"id": "turn-1", "status": turn_status, "items": items}],
        }}))
    }

    fn final_answer() -> Value {
        json!([{"id": "u", "type": "userMessage", "text": "Go."}, {"id": "a", "type": "agentMessage", "phase": "final_answer", "text": "Done."}])
    }

    #[test]
    fn a_final_answer_completes_a_stale_in_progress_turn() {
        let snapshot = read(json!("inProgress"), json!("inProgress"), final_answer());
        assert_eq!(
            (snapshot.latest_turn_status.as_str(), snapshot.thread_status.as_str(), snapshot.active_turn_id.as_str()),
            ("completed", "completed", "")
        );
        assert_eq!(snapshot.final_fp, fingerprint(&["agentMessage", "a", "final_answer", "Done."]));
        assert_eq!(snapshot.completion_fp, fingerprint(&["turn-1", "completed"]));
    }

    #[test]
    fn a_final_answer_while_waiting_is_not_terminal() {
        let status = json!({"type": "active", "activeFlags": ["waitingOnApproval"]});
        let snapshot = read(status, json!("inProgress"), final_answer());
        assert!(snapshot.waiting_on_approval);
        assert_eq!(snapshot.latest_turn_status, "inProgress");
        assert_eq!(snapshot.active_turn_id, "turn-1");
    }

    #[test]
    fn commentary_alone_is_not_final_but_a_legacy_message_is() {
        let commentary = json!([{"id": "a", "type": "agentMessage", "phase": "commentary", "text": "Working."}]);
        assert_eq!(read(json!("inProgress"), json!("inProgress"), commentary).latest_turn_status, "inProgress");
        let legacy = json!([{"id": "a", "type": "agentMessage", "text": "Working."}]);
        let snapshot = read(json!("inProgress"), json!("inProgress"), legacy);
        assert_eq!(snapshot.latest_turn_status, "completed");
        assert_eq!(snapshot.final_fp, fingerprint(&["agentMessage", "a", "Working."]));
    }

    #[test]
    fn idle_thread_status_is_kept_and_interrupted_stays_interrupted() {
        let snapshot = read(json!("idle"), json!("inProgress"), final_answer());
        assert_eq!((snapshot.latest_turn_status.as_str(), snapshot.thread_status.as_str()), ("completed", "idle"));
        let snapshot = read(json!("active"), json!("interrupted"), final_answer());
        assert_eq!(
            (snapshot.latest_turn_status.as_str(), snapshot.thread_status.as_str()),
            ("interrupted", "completed")
        );
        assert_eq!(snapshot.active_turn_id, "");
    }
}
