//! `thread/read` to a normalized snapshot (ADR-012 "Decisions", part B.1 and B.2.1 to B.2.3).
//!
//! A `final_answer` item is terminal evidence unless the same snapshot waits on approval or a reply,
//! so a stale `inProgress` status or `activeTurnId` cannot keep a finished turn looking active.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fingerprint::fingerprint;
use crate::render::{choice_options, clean_tool_text, first_string, map_string, string_value};
use crate::status::{WaitingFlag, has_flag, is_terminal, looks_live, status_text, turn_marks_active};

/// How many agent message entries a snapshot keeps, newest first.
const MAX_ENTRIES: usize = 3;

/// The question of a synthetic prompt when the turn asks nothing recognisable.
const DEFAULT_QUESTION: &str = "Input required.";

/// `model.PromptSourceSyntheticPoll`: the source of a prompt the poll synthesizes.
const SYNTHETIC_POLL: &str = "synthetic_poll";

/// One agent message or plan of the latest turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Entry {
    /// The item id.
    pub id: String,
    /// `commentary`, `final_answer`, `plan`, or `""` for a legacy message without a phase.
    pub phase: String,
    /// The trimmed text.
    pub text: String,
    /// `fingerprint("agentMessage", id, phase, text)`, for plans too and with an empty phase kept.
    pub fp: String,
}

/// The latest tool item of the turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Tool {
    /// The item id.
    pub id: String,
    /// The item type (`commandExecution`, `fileChange`, `dynamicToolCall`, `mcpToolCall`, `webSearch`).
    pub kind: String,
    /// What the tool does, nil-safe; never `"{}"` or `"<nil>"`.
    pub label: String,
    /// The item status, else the (normalized) turn status.
    pub status: String,
    /// `aggregatedOutput` as sent; a command's `output`, `stdout` or `stderr`; another tool's text.
    pub output: String,
    /// `fingerprint(kind, id, label, status, output)`.
    pub fp: String,
}

/// The prompt a waiting-on-reply snapshot synthesizes, so the operator can answer from Telegram.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct PlanPrompt {
    /// Always `synthetic_poll` here.
    pub source: String,
    /// The turn that waits.
    pub turn_id: String,
    /// The item the question comes from, or `""` for the default question.
    pub item_id: String,
    /// The newest non-final agent message or plan text, else the newest user question, else
    /// `"Input required."`; never the thread's stale preview.
    pub question: String,
    /// The choices of the newest item that has any.
    pub options: Vec<String>,
    /// `fingerprint("planPrompt", source, thread, turn, item, question, options joined by U+001F)`.
    pub fingerprint: String,
    /// Always `waiting for input`.
    pub status: String,
}

/// The kind of one detail line, in item order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Snapshot {
    /// `id` or `threadId`.
    pub thread_id: String,
    /// `name`, `title`, else the id.
    pub thread_title: String,
    /// `cwd`.
    pub thread_cwd: String,
    /// `ProjectNameFromCWD(cwd)`: never empty for a read (`Shared/General` without a cwd).
    pub thread_project: String,
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
    /// The newest progress line: the rendered text of the newest plan or tool item that has one.
    pub progress_text: String,
    /// `fingerprint(item type, item id, progress_text)`.
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
    /// `fingerprint(turn_id, status)` when the turn is `completed`, `interrupted` or `failed`, else `""`.
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

/// The item types codex-tg treats as tools (`SnapshotFromThreadRead`'s tool and progress switch).
const TOOL_TYPES: [&str; 5] = ["commandExecution", "fileChange", "dynamicToolCall", "mcpToolCall", "webSearch"];

/// `SnapshotFromThreadRead`: the nested `{"thread": ...}` form wins over the flat one; `null` is an empty snapshot.
///
/// An empty snapshot still has a project: codex-tg's `ThreadFromPayload` names every thread through
/// `ProjectNameFromCWD`, which gives `Shared/General` for an empty cwd.
pub fn from_thread_read(result: &Value) -> Snapshot {
    let empty = Map::new();
    let thread = match result.get("thread") {
        Some(Value::Object(thread)) => thread,
        _ => result.as_object().unwrap_or(&empty),
    };
    let mut snapshot = Snapshot {
        thread_id: first_string(thread, &["id", "threadId"]),
        thread_cwd: map_string(thread, "cwd"),
        thread_status: status_text(thread.get("status")),
        active_turn_id: map_string(thread, "activeTurnId"),
        ..Snapshot::default()
    };
    snapshot.thread_project = project_name_from_cwd(&snapshot.thread_cwd);
    snapshot.thread_title = first_string(thread, &["name", "title"]);
    if snapshot.thread_title.is_empty() {
        snapshot.thread_title = snapshot.thread_id.clone();
    }
    let latest_turn = thread.get("turns").and_then(Value::as_array).and_then(|turns| turns.last());
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
    let items: Vec<&Map<String, Value>> = turn
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    snapshot.entries = message_entries(&items);
    snapshot.entries.truncate(MAX_ENTRIES);
    snapshot.detail_kinds = detail_kinds(&items);
    if snapshot.waiting_on_reply {
        snapshot.plan_prompt = Some(synthetic_prompt(&snapshot.thread_id, &snapshot.latest_turn_id, &items));
    }
    if let Some((id, text)) = latest_user_message(&items) {
        snapshot.user_message_fp = fingerprint(&["userMessage", &id, &text]);
        snapshot.user_message_id = id;
        snapshot.user_message_text = text;
    }
    (snapshot.final_text, snapshot.final_fp) = latest_final(&items);
    normalize_finalized_turn(&mut snapshot);
    // After normalization, as upstream: a tool without a status takes the (normalized) turn status.
    fill_progress_and_tool(&mut snapshot, &items);
    snapshot.completion_fp = completion_fp(&snapshot.latest_turn_id, &snapshot.latest_turn_status);
    snapshot
}

/// `ProjectNameFromCWD` (codex-tg `internal/model/types.go`): the last path component of the cwd
/// (either separator), `Shared/General` when there is none or for the default Codex documents folder.
pub fn project_name_from_cwd(cwd: &str) -> String {
    const SHARED: &str = "Shared/General";
    let normalized = cwd.trim().replace('\\', "/");
    let trimmed = normalized.trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "." || trimmed.eq_ignore_ascii_case("c:/users/you/documents/codex") {
        return SHARED.to_owned();
    }
    match trimmed.rsplit('/').next() {
        Some(dir) if !dir.is_empty() && dir != "." => dir.to_owned(),
        _ => SHARED.to_owned(),
    }
}

/// `fingerprint(turn, status)` for a `completed`, `interrupted` or `failed` turn (exactly those
/// words, as `DiffSnapshot` and `CompactSnapshot` compare them), else `""`.
pub fn completion_fp(turn_id: &str, status: &str) -> String {
    if turn_id.is_empty() || !matches!(status, "completed" | "interrupted" | "failed") {
        String::new()
    } else {
        fingerprint(&[turn_id, status])
    }
}

/// `stringValue(item[key], "")`: a string as it is, unless it is the nil literal; anything else is `""`.
fn raw_string(map: &Map<String, Value>, key: &str) -> String {
    map.get(key).map(|value| string_value(value, "")).unwrap_or_default()
}

fn item_type(map: &Map<String, Value>) -> String {
    raw_string(map, "type").trim().to_owned()
}

/// `userMessageText`: `text`, else its `content[].text` joined by newlines; trimmed.
fn user_message_text(map: &Map<String, Value>) -> String {
    let direct = raw_string(map, "text").trim().to_owned();
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
                .map(|part| raw_string(part, "text").trim().to_owned())
                .filter(|text| !text.is_empty())
                .collect()
        })
        .unwrap_or_default();
    parts.join("\n").trim().to_owned()
}

/// `planText`: `text`, else `plan`, else the message text.
fn plan_text(map: &Map<String, Value>) -> String {
    for key in ["text", "plan"] {
        let text = raw_string(map, key).trim().to_owned();
        if !text.is_empty() {
            return text;
        }
    }
    user_message_text(map)
}

/// `renderItemText`: the one-line text of an item, as the progress line and tool fallbacks use it.
fn render_item_text(map: &Map<String, Value>) -> String {
    match item_type(map).as_str() {
        "agentMessage" => return raw_string(map, "text").trim().to_owned(),
        "userMessage" => return user_message_text(map),
        "plan" => return plan_text(map),
        "commandExecution" => {
            let command = clean_tool_text(&raw_string(map, "command"));
            let status = raw_string(map, "status").trim().to_owned();
            let output = raw_string(map, "aggregatedOutput").trim().to_owned();
            let labelled = !status.is_empty() && !command.is_empty();
            if !output.is_empty() {
                let line = output.lines().next().unwrap_or_default().trim();
                return if labelled { format!("{status}: {command}\nOutput: {line}") } else { line.to_owned() };
            }
            return if labelled { format!("{status}: {command}") } else { command };
        }
        "fileChange" => {
            let path = clean_tool_text(&raw_string(map, "path"));
            if !path.is_empty() {
                return format!("File changed: {path}");
            }
        }
        _ => {}
    }
    raw_string(map, "text").trim().to_owned()
}

/// `toolLabel`: the command, path, tool name or query, else the item's rendered text; never `{}` or `<nil>`.
fn tool_label(map: &Map<String, Value>) -> String {
    let first_clean = |keys: &[&str]| {
        keys.iter().map(|key| clean_tool_text(&raw_string(map, key))).find(|text| !text.is_empty()).unwrap_or_default()
    };
    let label = match item_type(map).as_str() {
        "commandExecution" => first_clean(&["command"]),
        "fileChange" => {
            let path = first_clean(&["path"]);
            if path.is_empty() { path } else { format!("File changed: {path}") }
        }
        "dynamicToolCall" | "mcpToolCall" => first_clean(&["tool", "name", "namespace"]),
        "webSearch" => first_clean(&["query", "text"]),
        _ => String::new(),
    };
    if label.is_empty() { clean_tool_text(&render_item_text(map)) } else { label }
}

/// `toolOutput`: `aggregatedOutput` as it is; a command's `output`, `stdout` or `stderr`; any other
/// tool's rendered text.
fn tool_output(map: &Map<String, Value>) -> String {
    let keys: &[&str] = if item_type(map) == "commandExecution" {
        &["aggregatedOutput", "output", "stdout", "stderr"]
    } else {
        &["aggregatedOutput"]
    };
    if let Some(output) = keys.iter().map(|key| raw_string(map, key)).find(|output| !output.trim().is_empty()) {
        return output;
    }
    if item_type(map) == "commandExecution" {
        return String::new();
    }
    render_item_text(map)
}

/// `toolStatus`: the item's status, else the turn's.
fn tool_status(map: &Map<String, Value>, turn_status: &str) -> String {
    let status = raw_string(map, "status").trim().to_owned();
    if status.is_empty() { turn_status.trim().to_owned() } else { status }
}

/// `collectAgentMessageEntriesFromItems`: agent messages and plans with text, newest first; a plan
/// without a phase has phase `plan`; every entry's fingerprint is `("agentMessage", id, phase, text)`,
/// an empty phase included.
fn message_entries(items: &[&Map<String, Value>]) -> Vec<Entry> {
    items
        .iter()
        .rev()
        .filter_map(|map| {
            let kind = item_type(map);
            let text = match kind.as_str() {
                "agentMessage" => user_message_text(map),
                "plan" => plan_text(map),
                _ => return None,
            };
            if text.is_empty() {
                return None;
            }
            let mut phase = raw_string(map, "phase").trim().to_owned();
            if kind == "plan" && phase.is_empty() {
                "plan".clone_into(&mut phase);
            }
            let id = raw_string(map, "id");
            let fp = fingerprint(&["agentMessage", &id, &phase, &text]);
            Some(Entry { id, phase, text, fp })
        })
        .collect()
}

/// `latestFinalAgentMessage`: the newest `final_answer` entry; when no entry has a phase at all
/// (a legacy turn), the newest entry, fingerprinted without a phase (BRIDGE-REF-LEGACY-FINAL).
fn latest_final(items: &[&Map<String, Value>]) -> (String, String) {
    let entries = message_entries(items);
    if let Some(entry) = entries.iter().find(|entry| entry.phase.trim().eq_ignore_ascii_case("final_answer")) {
        return (entry.text.clone(), entry.fp.clone());
    }
    if entries.iter().any(|entry| !entry.phase.trim().is_empty()) {
        return (String::new(), String::new());
    }
    entries
        .first()
        .map(|entry| (entry.text.clone(), fingerprint(&["agentMessage", &entry.id, &entry.text])))
        .unwrap_or_default()
}

/// `latestUserMessage`: the newest user message with text.
fn latest_user_message(items: &[&Map<String, Value>]) -> Option<(String, String)> {
    items.iter().rev().filter(|map| item_type(map) == "userMessage").find_map(|map| {
        let text = user_message_text(map);
        (!text.is_empty()).then(|| (raw_string(map, "id"), text))
    })
}

/// `collectDetailItemsFromItems`, by kind: only a `final_answer` message is a final detail (a
/// legacy phase-less message is commentary), and a tool with neither label nor output is skipped.
fn detail_kinds(items: &[&Map<String, Value>]) -> Vec<DetailKind> {
    let mut kinds = Vec::new();
    for map in items {
        match item_type(map).as_str() {
            "userMessage" if !user_message_text(map).is_empty() => kinds.push(DetailKind::User),
            "agentMessage" if !raw_string(map, "text").trim().is_empty() => {
                let final_answer = raw_string(map, "phase").trim().eq_ignore_ascii_case("final_answer");
                kinds.push(if final_answer { DetailKind::Final } else { DetailKind::Commentary });
            }
            "plan" if !plan_text(map).is_empty() => kinds.push(DetailKind::Plan),
            kind if TOOL_TYPES.contains(&kind) => {
                let label = tool_label(map);
                let output = tool_output(map);
                if label.trim().is_empty() && output.trim().is_empty() {
                    continue;
                }
                kinds.push(DetailKind::Tool);
                if !output.trim().is_empty() {
                    kinds.push(DetailKind::Output);
                }
            }
            _ => {}
        }
    }
    kinds
}

/// The progress line and the newest tool, newest item first: progress is the rendered text of the
/// newest plan or tool item that has one, `fingerprint(type, id, text)`; the tool is the newest
/// tool item, `fingerprint(type, id, label, status, output)`.
fn fill_progress_and_tool(snapshot: &mut Snapshot, items: &[&Map<String, Value>]) {
    for map in items.iter().rev() {
        let kind = item_type(map);
        let is_tool = TOOL_TYPES.contains(&kind.as_str());
        if kind != "plan" && !is_tool {
            continue;
        }
        let id = raw_string(map, "id");
        let text = render_item_text(map);
        if !text.is_empty() && snapshot.progress_fp.is_empty() {
            snapshot.progress_fp = fingerprint(&[&kind, &id, &text]);
            snapshot.progress_text = text;
        }
        if is_tool && snapshot.tool.is_none() {
            let label = tool_label(map);
            let status = tool_status(map, &snapshot.latest_turn_status);
            let output = tool_output(map);
            let fp = fingerprint(&[&kind, &id, &label, &status, &output]);
            snapshot.tool = Some(Tool { id, kind, label, status, output, fp });
        }
    }
}

/// `syntheticPlanPrompt`: the question is the newest non-final agent message or plan with text,
/// else the newest user message that asks something, else `Input required.`; the options are the
/// newest item's choices.
fn synthetic_prompt(thread_id: &str, turn_id: &str, items: &[&Map<String, Value>]) -> PlanPrompt {
    let asked = items.iter().rev().find_map(|map| {
        let text = match item_type(map).as_str() {
            "agentMessage" if !raw_string(map, "phase").trim().eq_ignore_ascii_case("final_answer") => {
                user_message_text(map)
            }
            "plan" => plan_text(map),
            _ => return None,
        };
        (!text.is_empty()).then(|| (raw_string(map, "id"), text))
    });
    let asked = asked.or_else(|| {
        items.iter().rev().filter(|map| item_type(map) == "userMessage").find_map(|map| {
            let text = user_message_text(map);
            text.contains('?').then(|| (raw_string(map, "id"), text))
        })
    });
    let (item_id, question) = asked.unwrap_or_else(|| (String::new(), DEFAULT_QUESTION.to_owned()));
    let options = items
        .iter()
        .rev()
        .map(|map| choice_options(&Value::Object((*map).clone())))
        .find(|options| !options.is_empty())
        .unwrap_or_default();
    let fingerprint =
        fingerprint(&["planPrompt", SYNTHETIC_POLL, thread_id, turn_id, &item_id, &question, &options.join("\u{1f}")]);
    PlanPrompt {
        source: SYNTHETIC_POLL.to_owned(),
        turn_id: turn_id.to_owned(),
        item_id,
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// `CompactSnapshot(previous, current)`: the state to store for a snapshot that the gate let through.
///
/// Everything comes from the snapshot except the completion fingerprint, which a non-terminal
/// snapshot leaves as `previous` had it (codex-tg keeps `LastCompletionFP` across a new turn).
pub fn compact(
    previous: Option<&SnapshotState>,
    snapshot: &Snapshot,
    next_poll_after_ms: Option<u64>,
) -> SnapshotState {
    let tool = snapshot.tool.clone().unwrap_or_default();
    let last_completion_fp = if snapshot.completion_fp.is_empty() {
        previous.map(|previous| previous.last_completion_fp.clone()).unwrap_or_default()
    } else {
        snapshot.completion_fp.clone()
    };
    SnapshotState {
        last_seen_thread_status: snapshot.thread_status.clone(),
        last_seen_turn_id: snapshot.latest_turn_id.clone(),
        last_seen_turn_status: snapshot.latest_turn_status.clone(),
        last_progress_fp: snapshot.progress_fp.clone(),
        last_final_fp: snapshot.final_fp.clone(),
        last_completion_fp,
        last_reply_fp: snapshot
            .plan_prompt
            .as_ref()
            .filter(|_| snapshot.waiting_on_reply)
            .map(|prompt| prompt.fingerprint.clone())
            .unwrap_or_default(),
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
    /// A `completed` or `interrupted` turn whose completion fingerprint is new.
    TurnCompleted,
    /// A `failed` turn whose completion fingerprint is new.
    TurnFailed,
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

/// `DiffSnapshot`, turn lifecycle only: a new turn starts, a new completion fingerprint completes
/// (or fails) it. A thread with no stored state yet emits nothing (`DiffSnapshot(nil, ...)`).
pub fn diff(previous: Option<&SnapshotState>, snapshot: &Snapshot) -> Vec<DiffEvent> {
    let Some(previous) = previous else { return Vec::new() };
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
        let kind = if snapshot.latest_turn_status == "failed" { DiffKind::TurnFailed } else { DiffKind::TurnCompleted };
        events.push(event(kind));
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

    #[test]
    fn a_nil_read_is_an_empty_snapshot_of_the_shared_project() {
        let snapshot = from_thread_read(&Value::Null);
        assert_eq!(snapshot.thread_project, "Shared/General");
        assert_eq!((snapshot.thread_id.as_str(), snapshot.latest_turn_id.as_str()), ("", ""));
    }

    #[test]
    fn projects_come_from_the_last_cwd_component() {
        assert_eq!(project_name_from_cwd("C:\\Users\\you\\Projects\\Codex"), "Codex");
        assert_eq!(project_name_from_cwd("/work/project/"), "project");
        assert_eq!(project_name_from_cwd(""), "Shared/General");
        assert_eq!(project_name_from_cwd("/"), "Shared/General");
        assert_eq!(project_name_from_cwd("C:\\Users\\you\\Documents\\Codex"), "Shared/General");
    }

    #[test]
    fn progress_comes_from_plans_and_tools_only() {
        let items = json!([
            {"id": "p", "type": "plan", "text": "Step 1"},
            {"id": "c", "type": "commandExecution", "command": "ls", "status": "completed", "aggregatedOutput": "a\nb"},
            {"id": "m", "type": "agentMessage", "phase": "commentary", "text": "Looking."},
        ]);
        let snapshot = read(json!("active"), json!("inProgress"), items);
        assert_eq!(snapshot.progress_text, "completed: ls\nOutput: a");
        assert_eq!(snapshot.progress_fp, fingerprint(&["commandExecution", "c", "completed: ls\nOutput: a"]));
        let tool = snapshot.tool.unwrap_or_default();
        assert_eq!(tool.fp, fingerprint(&["commandExecution", "c", "ls", "completed", "a\nb"]));
        let commentary = json!([{"id": "m", "type": "agentMessage", "phase": "commentary", "text": "Looking."}]);
        assert_eq!(read(json!("active"), json!("inProgress"), commentary).progress_text, "");
    }

    #[test]
    fn a_tool_without_status_takes_the_normalized_turn_status() {
        let items = json!([{"id": "t", "type": "dynamicToolCall", "tool": "read"}, {"id": "a", "type": "agentMessage", "phase": "final_answer", "text": "Done."}]);
        let snapshot = read(json!("active"), json!("inProgress"), items);
        assert_eq!(snapshot.tool.map(|tool| tool.status).unwrap_or_default(), "completed");
    }

    #[test]
    fn a_synthetic_prompt_fingerprints_source_ids_question_and_options() {
        let status = json!({"type": "active", "activeFlags": ["waitingOnUserInput"]});
        let items = json!([{"id": "p", "type": "plan", "text": "Which?", "choices": ["A", "B"]}]);
        let prompt = read(status, json!("inProgress"), items).plan_prompt.unwrap_or_default();
        assert_eq!((prompt.item_id.as_str(), prompt.question.as_str()), ("p", "Which?"));
        let expected = fingerprint(&["planPrompt", "synthetic_poll", "thread-1", "turn-1", "p", "Which?", "A\u{1f}B"]);
        assert_eq!(prompt.fingerprint, expected);
    }

    #[test]
    fn entries_keep_an_empty_phase_in_their_fingerprint() {
        let legacy = json!([{"id": "a", "type": "agentMessage", "text": "Hi."}]);
        let snapshot = read(json!("inProgress"), json!("inProgress"), legacy);
        assert_eq!(snapshot.entries[0].fp, fingerprint(&["agentMessage", "a", "", "Hi."]));
        assert_eq!(snapshot.final_fp, fingerprint(&["agentMessage", "a", "Hi."]));
        assert_eq!(snapshot.detail_kinds, [DetailKind::Commentary]);
    }

    #[test]
    fn only_a_stored_state_yields_events_and_keeps_its_completion() {
        let snapshot = read(json!("completed"), json!("completed"), final_answer());
        assert!(diff(None, &snapshot).is_empty());
        assert_eq!(diff(Some(&SnapshotState::default()), &snapshot).len(), 2);
        let stored = compact(None, &snapshot, None);
        let running = read(json!("active"), json!("inProgress"), json!([]));
        assert_eq!(compact(Some(&stored), &running, None).last_completion_fp, stored.last_completion_fp);
    }
}
