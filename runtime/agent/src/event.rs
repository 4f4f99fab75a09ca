//! The Event envelope and its vocabulary: the Log format (LOG-ENVELOPE, seed 004).
//!
//! An [`Event`] is `{id, session_id, seq, ts, type, data}`. Events are built only through
//! the [`Payload`] constructors and stamped by the owning Session, so an Event in memory
//! and an Event folded back from the Log have the same shape (the round-trip rule).

pub mod subagent;

use crate::resource::{Image, Link};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use subagent::{LifecycleEvent, SubagentStatus};

/// String-keyed event data, serialized with sorted keys.
pub type Data = Map<String, Value>;

/// Every event type the runtime knows (seed 004; pixir.md 1.1, plus `turn_failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// User input that opens a Turn.
    UserMessage,
    /// A final assistant answer, or partial text preserved after a failure.
    AssistantMessage,
    /// An opaque provider reasoning item, stamped with the model that made it.
    Reasoning,
    /// A Skill selected for a Turn.
    SkillActivation,
    /// A parent-visible Subagent lifecycle event.
    SubagentEvent,
    /// A Workflow lifecycle event.
    WorkflowEvent,
    /// Fork lineage of a child Session.
    SessionFork,
    /// A lossy summary carried into a fork.
    BranchSummary,
    /// A durable History compaction checkpoint.
    HistoryCompaction,
    /// Accounting for one provider call (audit only).
    ProviderUsage,
    /// Durable terminal failure evidence of a Turn (audit only).
    TurnFailed,
    /// A function call the model asked for.
    ToolCall,
    /// The outcome of a tool call.
    ToolResult,
    /// A permission decision for a gated tool call.
    PermissionDecision,
    /// A chunk of streamed assistant text (ephemeral).
    TextDelta,
    /// A chunk of streamed reasoning text (ephemeral).
    ReasoningDelta,
    /// A coarse status transition (ephemeral).
    Status,
    /// A live plan (ephemeral).
    Plan,
    /// A context-pressure notice (ephemeral).
    ContextPressure,
}

impl EventType {
    /// Every event type, canonical first.
    pub const ALL: [EventType; 19] = [
        EventType::UserMessage,
        EventType::AssistantMessage,
        EventType::Reasoning,
        EventType::SkillActivation,
        EventType::SubagentEvent,
        EventType::WorkflowEvent,
        EventType::SessionFork,
        EventType::BranchSummary,
        EventType::HistoryCompaction,
        EventType::ProviderUsage,
        EventType::TurnFailed,
        EventType::ToolCall,
        EventType::ToolResult,
        EventType::PermissionDecision,
        EventType::TextDelta,
        EventType::ReasoningDelta,
        EventType::Status,
        EventType::Plan,
        EventType::ContextPressure,
    ];

    /// Ephemeral types are live-only and never enter the Log (LOG-NO-EPHEMERAL).
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            EventType::TextDelta
                | EventType::ReasoningDelta
                | EventType::Status
                | EventType::Plan
                | EventType::ContextPressure
        )
    }

    /// The type whose wire name is `name`, if it is one of the contract's.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The wire name, e.g. `turn_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::UserMessage => "user_message",
            EventType::AssistantMessage => "assistant_message",
            EventType::Reasoning => "reasoning",
            EventType::SkillActivation => "skill_activation",
            EventType::SubagentEvent => "subagent_event",
            EventType::WorkflowEvent => "workflow_event",
            EventType::SessionFork => "session_fork",
            EventType::BranchSummary => "branch_summary",
            EventType::HistoryCompaction => "history_compaction",
            EventType::ProviderUsage => "provider_usage",
            EventType::TurnFailed => "turn_failed",
            EventType::ToolCall => "tool_call",
            EventType::ToolResult => "tool_result",
            EventType::PermissionDecision => "permission_decision",
            EventType::TextDelta => "text_delta",
            EventType::ReasoningDelta => "reasoning_delta",
            EventType::Status => "status",
            EventType::Plan => "plan",
            EventType::ContextPressure => "context_pressure",
        }
    }
}

/// How a Turn ended (ADR 0026 "Turn terminal states"; TURN-TERMINAL-VOCABULARY).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    /// A clean, non-partial `assistant_message` exists after the Turn's `user_message`.
    Completed,
    /// Useful text was streamed, then the Turn failed before a clean answer.
    PartialFailed,
    /// The Turn failed without useful assistant text.
    Failed,
    /// The operator or presenter interrupted the Turn.
    Interrupted,
    /// The Turn exceeded a time budget (stream idle or whole-turn).
    TimedOut,
}

impl TerminalStatus {
    /// The contract string, e.g. `partial_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalStatus::Completed => "completed",
            TerminalStatus::PartialFailed => "partial_failed",
            TerminalStatus::Failed => "failed",
            TerminalStatus::Interrupted => "interrupted",
            TerminalStatus::TimedOut => "timed_out",
        }
    }

    /// `failed`, `partial_failed` or `timed_out`: the Turn did not complete and nobody stopped
    /// it on purpose, so presenters show it as an error.
    pub fn is_failure(self) -> bool {
        matches!(self, TerminalStatus::Failed | TerminalStatus::PartialFailed | TerminalStatus::TimedOut)
    }

    /// Parses a contract string.
    pub fn parse(text: &str) -> Option<TerminalStatus> {
        [
            TerminalStatus::Completed,
            TerminalStatus::PartialFailed,
            TerminalStatus::Failed,
            TerminalStatus::Interrupted,
            TerminalStatus::TimedOut,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

impl std::fmt::Display for TerminalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cause of a failed Turn, written to `turn_failed.error_kind` (design.md "Contract decisions").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The transport failed: connection refused, reset, or dropped mid-body.
    Network,
    /// HTTP 429 after the retry budget ran out.
    RateLimited,
    /// A non-2xx answer, or an in-band `error` / `response.failed`.
    ProviderHttpError,
    /// No chunk arrived within the stream idle timeout.
    StreamIdleTimeout,
    /// The whole-turn time budget ran out.
    TurnTimeout,
    /// A frame that is not valid SSE or not a valid Responses event.
    InvalidResponse,
    /// The stream ended without `response.completed` or another terminal event.
    IncompleteStream,
    /// The operator cancelled the Turn.
    Cancelled,
    /// The runtime stopped mid-turn (a crash, `kill -9`); the resumed Session closed the Turn
    /// (TURN-RESTART-RECOVERY).
    Restarted,
}

impl ErrorKind {
    /// The contract string, e.g. `stream_idle_timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Network => "network",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::ProviderHttpError => "provider_http_error",
            ErrorKind::StreamIdleTimeout => "stream_idle_timeout",
            ErrorKind::TurnTimeout => "turn_timeout",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::IncompleteStream => "incomplete_stream",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Restarted => "restarted",
        }
    }

    /// Parses a contract string, as `turn_failed.error_kind` holds it.
    pub fn parse(text: &str) -> Option<ErrorKind> {
        ErrorKind::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(text)).ok()
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event: the envelope of seed 004. Fields serialize in sorted key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    data: Data,
    id: String,
    seq: Option<u64>,
    session_id: String,
    ts: String,
    #[serde(rename = "type")]
    kind: EventType,
}

impl Event {
    /// Stamps a payload with its envelope; only the Session (and Log tooling) does this.
    pub fn stamp(payload: Payload, session_id: &str, id: String, ts: String, seq: Option<u64>) -> Event {
        let seq = if payload.kind.is_ephemeral() { None } else { seq };
        Event { data: payload.data, id, seq, session_id: session_id.to_owned(), ts, kind: payload.kind }
    }

    /// The event id.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The owning Session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// The per-Session sequence number; `None` for ephemeral events.
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// The ISO-8601 timestamp with microseconds.
    pub fn ts(&self) -> &str {
        &self.ts
    }
    /// The event type.
    pub fn kind(&self) -> EventType {
        self.kind
    }
    /// The string-keyed payload.
    pub fn data(&self) -> &Data {
        &self.data
    }
    /// A string field of `data`.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.data.get(key).and_then(Value::as_str)
    }
    /// True for an `assistant_message` whose `metadata.partial` is true (TURN-PARTIAL-EVIDENCE).
    pub fn is_partial_assistant(&self) -> bool {
        self.kind == EventType::AssistantMessage
            && self.data.get("metadata").and_then(|m| m.get("partial")).and_then(Value::as_bool) == Some(true)
    }
    /// The compact JSON line of this event, keys sorted at every depth.
    pub fn to_json_line(&self) -> String {
        crate::canonical::to_string(self)
    }
}

/// The type and data of an event before the Session stamps its envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    kind: EventType,
    data: Data,
}

pub(crate) fn object(value: Value) -> Data {
    match value {
        Value::Object(map) => map,
        _ => Data::new(),
    }
}

/// What a user's message opens a Turn with.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    /// Its text.
    pub text: String,
    /// Its images.
    pub images: Vec<Image>,
    /// The resources it points at.
    pub links: Vec<Link>,
    /// The key its client named the submission by, recorded with it so a retry is known.
    pub idempotency_key: Option<String>,
}

impl Payload {
    /// The event type.
    pub fn kind(&self) -> EventType {
        self.kind
    }
    /// The data so far.
    pub fn data(&self) -> &Data {
        &self.data
    }

    fn new(kind: EventType, data: Value) -> Payload {
        Payload { kind, data: object(data) }
    }

    /// User input that opens a Turn.
    pub fn user_message(text: &str) -> Payload {
        Payload::new(EventType::UserMessage, json!({ "text": text }))
    }
    /// A user's prompt: its text; `resources`, each attached image's descriptor, never its
    /// bytes (LOG-NO-RESOURCE-BYTES); `links`, each resource it points at by URI; and
    /// `idempotency_key`, the key its client submitted it by (ACP v2 `idempotencyKey`), kept so
    /// a retry is recognised "for as long as it retains the message, including across
    /// connections and Agent restarts". Each is omitted when there is none.
    pub fn user_message_of(prompt: &Prompt) -> Payload {
        let mut payload = Payload::user_message(&prompt.text);
        if !prompt.images.is_empty() {
            payload.data.insert("resources".into(), prompt.images.iter().map(Image::descriptor).collect());
        }
        if !prompt.links.is_empty() {
            payload.data.insert("links".into(), prompt.links.iter().map(Link::descriptor).collect());
        }
        if let Some(key) = &prompt.idempotency_key {
            payload.data.insert("idempotency_key".into(), json!(key));
        }
        payload
    }
    /// A clean final answer; `metadata` is omitted when empty.
    pub fn assistant_message(text: &str, metadata: Data) -> Payload {
        let mut data = object(json!({ "text": text }));
        if !metadata.is_empty() {
            data.insert("metadata".into(), Value::Object(metadata));
        }
        Payload { kind: EventType::AssistantMessage, data }
    }
    /// Partial text preserved after a failure: never replayed (TURN-PARTIAL-EVIDENCE).
    pub fn partial_assistant_message(text: &str, status: TerminalStatus, kind: ErrorKind, message: &str) -> Payload {
        let metadata = object(json!({
            "partial": true,
            "terminal_status": status.as_str(),
            "error_kind": kind.as_str(),
            "error_message": message,
        }));
        Payload::assistant_message(text, metadata)
    }
    /// An opaque reasoning item and the model that produced it.
    pub fn reasoning(item: Value, model: &str) -> Payload {
        Payload::new(EventType::Reasoning, json!({ "item": item, "model": model }))
    }
    /// Accounting for one provider call.
    pub fn provider_usage(data: Data) -> Payload {
        Payload { kind: EventType::ProviderUsage, data }
    }
    /// Durable terminal failure evidence (TURN-FAILED-EVIDENCE).
    pub fn turn_failed(status: TerminalStatus, kind: ErrorKind, message: &str, details: Data) -> Payload {
        Payload::new(
            EventType::TurnFailed,
            json!({
                "terminal_status": status.as_str(),
                "error_kind": kind.as_str(),
                "error_message": message,
                "details": details,
            }),
        )
    }
    /// A function call the model asked for; `args` is the decoded JSON object, or the model's
    /// text when it is not one (ACP-INVALID-ARGUMENTS).
    pub fn tool_call(call_id: &str, name: &str, args: Value) -> Payload {
        Payload::new(EventType::ToolCall, json!({ "call_id": call_id, "name": name, "args": args }))
    }
    /// A tool call the Turn gave an id of its own because the model gave its id, `given`, to
    /// an earlier call of the same reply (REPLAY-CALL-ID-UNIQUE); `given_call_id` keeps it.
    pub fn repeated_tool_call(call_id: &str, given: &str, name: &str, args: Value) -> Payload {
        let data = json!({ "call_id": call_id, "given_call_id": given, "name": name, "args": args });
        Payload::new(EventType::ToolCall, data)
    }
    /// The result of a tool call: `ok` plus `output`, or `ok: false` plus `error`.
    pub fn tool_result(call_id: &str, result: Data) -> Payload {
        let mut data = result;
        data.insert("call_id".into(), Value::String(call_id.to_owned()));
        Payload { kind: EventType::ToolResult, data }
    }
    /// A parent-visible Subagent lifecycle event (SUB-EVENT-FIELDS).
    pub fn subagent_event(data: Data) -> Payload {
        Payload { kind: EventType::SubagentEvent, data }
    }
    /// A Workflow spine event; `data.kind` says which (WF-SPINE).
    pub fn workflow_event(data: Data) -> Payload {
        Payload { kind: EventType::WorkflowEvent, data }
    }
    /// A durable History compaction checkpoint: the range it covers and the summary the replay
    /// fold sends in its place (LOG-COMPACTION-RECORD).
    pub fn history_compaction(data: Data) -> Payload {
        Payload { kind: EventType::HistoryCompaction, data }
    }
    /// A fork's lossy summary of its parent's prefix, replayed where it stands
    /// (REPLAY-BRANCH-SUMMARY).
    pub fn branch_summary(data: Data) -> Payload {
        Payload { kind: EventType::BranchSummary, data }
    }
    /// A forked Session's lineage: never replayed (REPLAY-FORK-LINEAGE).
    pub fn session_fork(data: Data) -> Payload {
        Payload { kind: EventType::SessionFork, data }
    }
    /// A streamed chunk of assistant text (ephemeral).
    pub fn text_delta(chunk: &str) -> Payload {
        Payload::new(EventType::TextDelta, json!({ "chunk": chunk }))
    }
    /// A streamed chunk of reasoning text (ephemeral).
    pub fn reasoning_delta(chunk: &str) -> Payload {
        Payload::new(EventType::ReasoningDelta, json!({ "chunk": chunk }))
    }
    /// The model's complete current to-do list, ACP `PlanEntry` objects (ephemeral: a plan
    /// never enters the Log, LOG-NO-EPHEMERAL; each one is the whole list, ACP-PLAN-WHOLE-LIST).
    pub fn plan(entries: Vec<Value>) -> Payload {
        Payload::new(EventType::Plan, json!({ "entries": entries }))
    }
    /// A coarse status transition (ephemeral).
    pub fn status(status: &str) -> Payload {
        Payload::new(EventType::Status, json!({ "status": status }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_serializes_with_sorted_keys() {
        let event = Event::stamp(Payload::user_message("hi"), "s1", "00000000000000a1".into(), "t".into(), Some(0));
        assert_eq!(
            event.to_json_line(),
            r#"{"data":{"text":"hi"},"id":"00000000000000a1","seq":0,"session_id":"s1","ts":"t","type":"user_message"}"#
        );
    }

    #[test]
    fn ephemeral_events_never_carry_a_seq() {
        let event = Event::stamp(Payload::text_delta("x"), "s1", "i".into(), "t".into(), Some(4));
        assert_eq!(event.seq(), None);
    }

    #[test]
    fn wire_names_match_serde() {
        for kind in EventType::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), Value::String(kind.as_str().into()));
        }
    }

    #[test]
    fn partial_assistant_is_recognised() {
        let payload = Payload::partial_assistant_message("x", TerminalStatus::PartialFailed, ErrorKind::Network, "m");
        let event = Event::stamp(payload, "s", "i".into(), "t".into(), Some(1));
        assert!(event.is_partial_assistant());
    }
}
