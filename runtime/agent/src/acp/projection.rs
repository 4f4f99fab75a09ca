//! The presenter projection of Events to ACP `session/update`s, live and on `session/load`
//! (ADR 0026 "Presenter projection"; pixir.md 5.1, 5.3).
//!
//! Live, deltas stream as chunks. On load, the transcript is rebuilt from the Log alone: each
//! user message, each clean assistant message as one chunk, and tool calls as they were shown
//! live. Partial text, `turn_failed`, reasoning and audit-only events are never replayed as
//! transcript (ACP-LOAD-CLEAN).

use std::path::{Component, Path};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, ResourceLink, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;

use crate::event::{Event, EventType, LifecycleEvent, SubagentStatus, subagent};
use crate::resource;

/// What the projection needs besides the Event.
#[derive(Debug, Clone)]
pub struct Projector<'a> {
    /// The Session's workspace, for absolute tool locations.
    pub workspace: &'a Path,
    /// The model's context window, for `usage_update`; none, none sent.
    pub context_window: Option<u64>,
}

impl Projector<'_> {
    /// The live update for an Event, if it has one.
    pub fn live(&self, event: &Event) -> Option<SessionUpdate> {
        match event.kind() {
            EventType::TextDelta => Some(SessionUpdate::AgentMessageChunk(chunk(event.str_field("chunk")?))),
            EventType::ReasoningDelta => Some(SessionUpdate::AgentThoughtChunk(chunk(event.str_field("chunk")?))),
            // The whole list, as the tool published it (ACP-PLAN-WHOLE-LIST).
            EventType::Plan => {
                let entries = event.data().get("entries")?.clone();
                serde_json::from_value(serde_json::json!({ "entries": entries })).ok().map(SessionUpdate::Plan)
            }
            // A summary call's usage is not the conversation's size (crate::compaction).
            EventType::ProviderUsage if event.str_field("purpose") == Some("compaction") => None,
            EventType::ProviderUsage => {
                let used = event.data().get("usage_summary")?.get("total_tokens")?.as_u64()?;
                Some(SessionUpdate::UsageUpdate(UsageUpdate::new(used, self.context_window?)))
            }
            _ => self.tool(event),
        }
    }

    /// The transcript replayed on `session/load`, rebuilt from History: a user message is its
    /// text, then each link it pointed at as the `resource_link` block it was sent as.
    pub fn replay(&self, history: &[Event]) -> Vec<SessionUpdate> {
        history.iter().flat_map(|event| self.replayed(event).into_iter().chain(links(event))).collect()
    }

    /// The update an Event is replayed as, if it has one.
    fn replayed(&self, event: &Event) -> Option<SessionUpdate> {
        match event.kind() {
            EventType::UserMessage => Some(SessionUpdate::UserMessageChunk(chunk(event.str_field("text")?))),
            // An empty answer showed nothing live, so its replay shows nothing either.
            EventType::AssistantMessage if !event.is_partial_assistant() => {
                let text = event.str_field("text").filter(|text| !text.is_empty())?;
                Some(SessionUpdate::AgentMessageChunk(chunk(text)))
            }
            _ => self.tool(event),
        }
    }

    /// Tool calls and results, and each Subagent as one stable tool item: the same live and
    /// replayed.
    fn tool(&self, event: &Event) -> Option<SessionUpdate> {
        if event.kind() == EventType::SubagentEvent {
            return subagent(event);
        }
        let call_id = event.str_field("call_id")?;
        match event.kind() {
            EventType::ToolCall => {
                let name = event.str_field("name").unwrap_or_default();
                let args = event.data().get("args").cloned().unwrap_or(Value::Null);
                let path = args.get("path").and_then(Value::as_str);
                let title = match (name, path, args.get("ms").and_then(Value::as_u64)) {
                    (_, Some(path), _) => format!("{name} {path}"),
                    ("wait", None, Some(ms)) => format!("wait {ms} ms"),
                    _ => name.to_owned(),
                };
                let kind = match name {
                    "read" | "list" => ToolKind::Read,
                    "write" => ToolKind::Edit,
                    "wait" => ToolKind::Execute,
                    _ => ToolKind::Other,
                };
                let locations = path
                    .filter(|path| inside(path))
                    .map(|path| vec![ToolCallLocation::new(self.workspace.join(path))])
                    .unwrap_or_default();
                let call = ToolCall::new(call_id.to_owned(), title)
                    .kind(kind)
                    .status(ToolCallStatus::InProgress)
                    .locations(locations)
                    .raw_input(args);
                Some(SessionUpdate::ToolCall(call))
            }
            EventType::ToolResult => {
                let ok = event.data().get("ok").and_then(Value::as_bool) == Some(true);
                let text = match event.str_field("output") {
                    Some(output) if ok => output.to_owned(),
                    _ => {
                        let error = event.data().get("error");
                        let field = |key| error.and_then(|e| e.get(key)).and_then(Value::as_str).unwrap_or("unknown");
                        format!("{}: {}", field("kind"), field("message"))
                    }
                };
                // A wait or a workflow that did not fully complete is not shown as completed,
                // though the call itself succeeded (SUB-ACP-ITEM, WF-ACP-PARTIAL).
                let partial = subagent::reports_partial(event.data());
                let status = if ok && !partial { ToolCallStatus::Completed } else { ToolCallStatus::Failed };
                let mut fields = ToolCallUpdateFields::new().status(status).content(vec![ToolCallContent::from(text)]);
                let raw: serde_json::Map<String, Value> = ["subagent", "subagents", "outcome", "workflow"]
                    .into_iter()
                    .filter_map(|key| event.data().get(key).map(|value| (key.to_owned(), value.clone())))
                    .collect();
                if !raw.is_empty() {
                    fields = fields.raw_output(Value::Object(raw));
                }
                Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_owned(), fields)))
            }
            _ => None,
        }
    }
}

/// The `resource_link` blocks a user message pointed at, each a user chunk of its own.
fn links(event: &Event) -> Vec<SessionUpdate> {
    if event.kind() != EventType::UserMessage {
        return Vec::new();
    }
    resource::links(event.data())
        .into_iter()
        .map(|link| {
            let block = ContentBlock::ResourceLink(ResourceLink::new(link.name, link.uri));
            SessionUpdate::UserMessageChunk(ContentChunk::new(block))
        })
        .collect()
}

/// A `subagent_event` as its one stable tool item (pixir.md 5.1): `queued` opens it as a
/// `tool_call` in progress, later events update it, and a terminal event ends it `completed`
/// (completed, closed) or `failed` (failed, timed out, cancelled, detached) (SUB-ACP-ITEM).
fn subagent(event: &Event) -> Option<SessionUpdate> {
    let id = event.str_field("subagent_id")?;
    let lifecycle = LifecycleEvent::parse(event.str_field("event")?)?;
    let status = lifecycle.status();
    let call_id = format!("gauntlet:{}:subagent:{id}", event.session_id());
    let title = format!("Subagent {id} ({})", event.str_field("agent").unwrap_or("default"));
    let about =
        event.str_field("summary").filter(|text| !text.is_empty()).or(event.str_field("task")).unwrap_or_default();
    let text = format!("{status}: {about}");
    let acp_status = match status {
        SubagentStatus::Queued | SubagentStatus::Running => ToolCallStatus::InProgress,
        SubagentStatus::Completed | SubagentStatus::Closed => ToolCallStatus::Completed,
        _ => ToolCallStatus::Failed,
    };
    let mut raw = event.data().clone();
    raw.remove("event");
    let raw = serde_json::json!({"event": lifecycle.as_str(), "subagent": raw});
    if lifecycle == LifecycleEvent::Queued {
        let call = ToolCall::new(call_id, title)
            .kind(ToolKind::Other)
            .status(acp_status)
            .content(vec![ToolCallContent::from(text)])
            .raw_input(raw);
        return Some(SessionUpdate::ToolCall(call));
    }
    let fields = ToolCallUpdateFields::new()
        .title(title)
        .status(acp_status)
        .content(vec![ToolCallContent::from(text)])
        .raw_output(raw);
    Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id, fields)))
}

fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text))
}

/// A relative path that stays inside the workspace.
fn inside(path: &str) -> bool {
    Path::new(path).components().all(|component| matches!(component, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Data, ErrorKind, Payload, TerminalStatus};
    use serde_json::json;

    fn events(payloads: Vec<Payload>) -> Vec<Event> {
        payloads
            .into_iter()
            .enumerate()
            .map(|(seq, payload)| Event::stamp(payload, "s", seq.to_string(), "t".into(), Some(seq as u64)))
            .collect()
    }

    fn projector() -> Projector<'static> {
        Projector { workspace: Path::new("/ws"), context_window: Some(1000) }
    }

    fn kinds(updates: &[SessionUpdate]) -> Vec<String> {
        updates
            .iter()
            .map(|update| serde_json::to_value(update).unwrap()["sessionUpdate"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn load_replays_the_clean_transcript_only() {
        let history = events(vec![
            Payload::user_message("one"),
            Payload::provider_usage(Data::new()),
            Payload::reasoning(json!({"id": "rs"}), "m"),
            Payload::assistant_message("clean", Data::new()),
            Payload::user_message("two"),
            Payload::partial_assistant_message("half", TerminalStatus::PartialFailed, ErrorKind::Network, "m"),
            Payload::turn_failed(TerminalStatus::PartialFailed, ErrorKind::Network, "boom", Data::new()),
        ]);
        let updates = projector().replay(&history);
        assert_eq!(kinds(&updates), ["user_message_chunk", "agent_message_chunk", "user_message_chunk"]);
        let text = serde_json::to_string(&updates).unwrap();
        assert!(text.contains("clean") && !text.contains("half") && !text.contains("boom"));
    }

    #[test]
    fn tool_calls_show_title_kind_and_location() {
        let history = events(vec![Payload::tool_call("c1", "read", json!({"path": "a.txt"}))]);
        let update = serde_json::to_value(&projector().replay(&history)[0]).unwrap();
        assert_eq!(update["title"], "read a.txt");
        assert_eq!(update["kind"], "read");
        assert_eq!(update["status"], "in_progress");
        assert_eq!(update["locations"][0]["path"], "/ws/a.txt");
    }

    #[test]
    fn a_failed_tool_result_is_a_failed_update() {
        let mut result = Data::new();
        result.insert("ok".into(), json!(false));
        result.insert("error".into(), json!({"kind": "io_error", "message": "gone"}));
        let update = projector().live(&events(vec![Payload::tool_result("c1", result)])[0]).unwrap();
        let update = serde_json::to_value(update).unwrap();
        assert_eq!(update["status"], "failed");
        assert_eq!(update["content"][0]["content"]["text"], "io_error: gone");
    }

    #[test]
    fn a_subagent_is_one_stable_item_that_ends_failed_unless_completed() {
        let lifecycle = |event: &str, status: &str| {
            let data = json!({"event": event, "status": status, "subagent_id": "sub_1", "agent": "worker", "task": "t", "summary": "s"});
            let serde_json::Value::Object(data) = data else { unreachable!() };
            Payload::subagent_event(data)
        };
        let history = events(vec![
            lifecycle("queued", "queued"),
            lifecycle("started", "running"),
            lifecycle("timed_out", "timed_out"),
        ]);
        let updates: Vec<_> = projector().replay(&history).iter().map(|u| serde_json::to_value(u).unwrap()).collect();
        let ids: Vec<_> = updates.iter().map(|u| u["toolCallId"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ids, ["gauntlet:s:subagent:sub_1"; 3]);
        let kinds: Vec<_> = updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap().to_owned()).collect();
        assert_eq!(kinds, ["tool_call", "tool_call_update", "tool_call_update"]);
        let statuses: Vec<_> = updates.iter().map(|u| u["status"].as_str().unwrap().to_owned()).collect();
        assert_eq!(statuses, ["in_progress", "in_progress", "failed"]);
    }
}
