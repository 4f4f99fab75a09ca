//! A Log line, parsed just enough to judge it, and typed views of its payload: for each Event
//! type of seed 004, the fields a reading or a rule looks at, each key named here once, so a
//! misspelt field is a compile error at its reader instead of a silent `None` (a lint in
//! `harness/tests/lints.rs` keeps keyed `data` reads inside this module).
//!
//! A view borrows from its [`Line`] and is built on demand: `Some` only for a line of its type.
//! A field a Log leaves out, or types otherwise, reads as absent: the judge reads any
//! implementation's Log, and the Log rules, not these views, say what a field must be. A key
//! no view names is ignored, as codex-rs ignores the fields of an event it does not read.
//! Views are plain accessors rather than serde derives because serde cannot borrow a nested
//! `Value` (`args`, `details`, `workflow`) from the line.

use gauntlet_agent::EventType;
use gauntlet_agent::event::{LifecycleEvent, SubagentStatus};
use serde_json::Value;

use crate::event_kind::EventKind;

/// A Log line parsed just enough to audit it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// `id`, if the line has one.
    pub id: Option<String>,
    /// `seq`, if the line has one.
    pub seq: Option<u64>,
    /// `type`.
    pub kind: EventKind,
    /// `data`.
    pub data: Value,
}

/// Why a Log line cannot be audited.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// It is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// It has no string `type`.
    #[error("no string `type`")]
    NoType,
}

impl Line {
    /// Parses one Log line.
    pub fn parse(text: &str) -> Result<Line, LineError> {
        let value: Value = serde_json::from_str(text)?;
        let kind = EventKind::parse(value.get("type").and_then(Value::as_str).ok_or(LineError::NoType)?);
        Ok(Line {
            id: value.get("id").and_then(Value::as_str).map(str::to_owned),
            seq: value.get("seq").and_then(Value::as_u64),
            kind,
            data: value.get("data").cloned().unwrap_or(Value::Null),
        })
    }

    /// An `assistant_message` with `metadata.partial == true`.
    pub fn is_partial_assistant(&self) -> bool {
        self.assistant_message().is_some_and(|message| message.partial)
    }
}

/// Parses every line; unreadable lines are reported, not fatal, with the reason as the text
/// the audit shows.
pub fn parse_lines(lines: &[String]) -> (Vec<Line>, Vec<(usize, String)>) {
    let mut parsed = Vec::new();
    let mut unreadable = Vec::new();
    for (idx, text) in lines.iter().enumerate() {
        match Line::parse(text) {
            Ok(line) => parsed.push(line),
            Err(reason) => unreadable.push((idx + 1, reason.to_string())),
        }
    }
    (parsed, unreadable)
}

/// `user_message`: a prompt that opens a Turn.
#[derive(Debug, Clone, Copy)]
pub struct UserMessage<'a> {
    /// `text`.
    pub text: Option<&'a str>,
    /// `links`: each resource the prompt points at, `{ uri, ... }`.
    pub links: &'a [Value],
    /// `resources`: each attached image's descriptor, never its bytes.
    pub resources: &'a [Value],
    /// `idempotency_key`: the key its client submitted it by (ACP v2).
    pub idempotency_key: Option<&'a str>,
}

/// `assistant_message`: an answer, or partial text kept after a failure.
#[derive(Debug, Clone, Copy)]
pub struct AssistantMessage<'a> {
    /// `text`.
    pub text: Option<&'a str>,
    /// `metadata.partial == true` (TURN-PARTIAL-EVIDENCE).
    pub partial: bool,
    /// `metadata.terminal_status` of a partial message.
    pub terminal_status: Option<&'a str>,
    /// `metadata.error_kind` of a partial message.
    pub error_kind: Option<&'a str>,
    /// `metadata.output_truncation.reason`: why the Provider cut the answer.
    pub truncation: Option<&'a str>,
}

/// `turn_failed`: durable terminal failure evidence.
#[derive(Debug, Clone, Copy)]
pub struct TurnFailed<'a> {
    /// `terminal_status`.
    pub terminal_status: Option<&'a str>,
    /// `error_kind`.
    pub error_kind: Option<&'a str>,
    /// `error_message`: the diagnostic, never replayed.
    pub error_message: Option<&'a str>,
    /// `details`: the failure's evidence (`elapsed_ms`, `timeout_ms`, `attempts`, ...).
    pub details: Option<&'a Value>,
}

impl<'a> TurnFailed<'a> {
    /// `details.<key>`.
    pub fn detail(&self, key: &str) -> Option<&'a Value> {
        self.details?.get(key)
    }
}

/// `tool_call`: a function call the model asked for.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// `call_id`.
    pub call_id: Option<&'a str>,
    /// `given_call_id`: the model's own id, when the runtime gave the call another one
    /// (REPLAY-CALL-ID-UNIQUE).
    pub given_call_id: Option<&'a str>,
    /// `name`: the tool called.
    pub name: Option<&'a str>,
    /// `args`: the decoded arguments, or the model's text when they are not an object.
    pub args: Option<&'a Value>,
}

/// `tool_result`: what a call returned.
#[derive(Debug, Clone, Copy)]
pub struct ToolResult<'a> {
    /// `call_id`.
    pub call_id: Option<&'a str>,
    /// `ok`.
    pub ok: Option<bool>,
    /// `output`: the text the model is given back.
    pub output: Option<&'a str>,
    /// `output` whatever its type, for a report that shows it as written.
    pub output_value: Option<&'a Value>,
    /// `error`, of a failed call: `{ kind, details, ... }`.
    pub error: Option<&'a Value>,
    /// `workflow`: a `run_workflow` call's result.
    pub workflow: Option<&'a Value>,
    /// `outcome`: a `wait_agent` call's buckets.
    pub outcome: Option<&'a Value>,
    /// `subagent`: a `spawn_agent` call's child, `{ status, ... }`.
    pub subagent: Option<&'a Value>,
}

impl<'a> ToolResult<'a> {
    /// `error.kind`.
    pub fn error_kind(&self) -> Option<&'a str> {
        self.error?.get("kind")?.as_str()
    }

    /// `error.details`.
    pub fn error_details(&self) -> Option<&'a Value> {
        self.error?.get("details")
    }
}

/// `subagent_event`: a parent-visible Subagent lifecycle event (SUB-EVENT-FIELDS).
#[derive(Debug, Clone, Copy)]
pub struct SubagentEvent<'a> {
    /// `subagent_id`.
    pub subagent_id: Option<&'a str>,
    /// `agent`: the child's agent profile.
    pub agent: Option<&'a str>,
    /// `status`: one of seed 004's Subagent statuses.
    pub status: Option<&'a str>,
    /// `event`: the lifecycle event.
    pub event: Option<&'a str>,
    /// `summary`.
    pub summary: Option<&'a str>,
    /// `reason`.
    pub reason: Option<&'a str>,
    /// `child_session_id`.
    pub child_session_id: Option<&'a str>,
    /// `child_log_path`.
    pub child_log_path: Option<&'a str>,
    /// `elapsed_ms`.
    pub elapsed_ms: Option<&'a Value>,
    /// `checkpoint`: the child's checkpoint evidence.
    pub checkpoint: Option<&'a Value>,
}

impl SubagentEvent<'_> {
    /// `status`, when it is one of the contract's Subagent statuses.
    pub fn subagent_status(&self) -> Option<SubagentStatus> {
        self.status.and_then(SubagentStatus::parse)
    }

    /// `event`, when it is one of the contract's lifecycle events.
    pub fn lifecycle_event(&self) -> Option<LifecycleEvent> {
        self.event.and_then(LifecycleEvent::parse)
    }
}

/// `workflow_event`: a Workflow spine event; `kind` says which (WF-SPINE).
#[derive(Debug, Clone, Copy)]
pub struct WorkflowEvent<'a> {
    /// `workflow_id`.
    pub workflow_id: Option<&'a str>,
    /// `kind`: which spine event.
    pub kind: Option<&'a str>,
    /// `step_id`.
    pub step_id: Option<&'a str>,
    /// `wave`, of `step_scheduled`.
    pub wave: Option<u64>,
    /// `checkpoint_status`, of `checkpoint_decided`.
    pub checkpoint_status: Option<&'a str>,
    /// `subagent_status`: how the step's child ended.
    pub subagent_status: Option<&'a str>,
    /// `reason`.
    pub reason: Option<&'a str>,
    /// `ok`.
    pub ok: Option<bool>,
    /// `dependent_safe`, of `checkpoint_decided`.
    pub dependent_safe: Option<&'a Value>,
    /// `graph`, of `workflow_started`: `{ steps }`.
    pub graph: Option<&'a Value>,
    /// `limits`, of `workflow_started`: `{ max_concurrency, ... }`.
    pub limits: Option<&'a Value>,
}

/// `history_compaction` and `branch_summary`: a summary that stands in for earlier History.
#[derive(Debug, Clone, Copy)]
pub struct Summary<'a> {
    /// `summary`.
    pub summary: Option<&'a str>,
    /// `instruction`: what the summary was asked to keep.
    pub instruction: Option<&'a str>,
    /// `range.from_seq`.
    pub from_seq: Option<u64>,
    /// `range.to_seq`.
    pub to_seq: Option<u64>,
}

/// `reasoning`: an opaque reasoning item and the model that produced it.
#[derive(Debug, Clone, Copy)]
pub struct Reasoning<'a> {
    /// `item`: the Provider's opaque reasoning item.
    pub item: Option<&'a Value>,
    /// `model`.
    pub model: Option<&'a str>,
}

/// `provider_usage`: accounting for one Provider call, its `usage` in the Responses API's shape.
#[derive(Debug, Clone, Copy)]
pub struct ProviderUsage<'a> {
    /// `model`.
    pub model: Option<&'a str>,
    /// `usage.input_tokens`.
    pub input_tokens: Option<u64>,
    /// `usage.input_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
    /// `usage.output_tokens`.
    pub output_tokens: Option<u64>,
    /// `usage.output_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: Option<u64>,
    /// `usage.total_tokens`.
    pub total_tokens: Option<u64>,
}

impl Line {
    /// This line as a `user_message`.
    pub fn user_message(&self) -> Option<UserMessage<'_>> {
        let data = self.of(EventType::UserMessage)?;
        let list = |key: &str| data.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        Some(UserMessage {
            text: text(data, "text"),
            links: list("links"),
            resources: list("resources"),
            idempotency_key: text(data, "idempotency_key"),
        })
    }

    /// This line as an `assistant_message`.
    pub fn assistant_message(&self) -> Option<AssistantMessage<'_>> {
        let data = self.of(EventType::AssistantMessage)?;
        let metadata = data.get("metadata").unwrap_or(&Value::Null);
        Some(AssistantMessage {
            text: text(data, "text"),
            partial: metadata.get("partial").and_then(Value::as_bool) == Some(true),
            terminal_status: text(metadata, "terminal_status"),
            error_kind: text(metadata, "error_kind"),
            truncation: metadata.pointer("/output_truncation/reason").and_then(Value::as_str),
        })
    }

    /// This line as a `turn_failed`.
    pub fn turn_failed(&self) -> Option<TurnFailed<'_>> {
        let data = self.of(EventType::TurnFailed)?;
        Some(TurnFailed {
            terminal_status: text(data, "terminal_status"),
            error_kind: text(data, "error_kind"),
            error_message: text(data, "error_message"),
            details: data.get("details"),
        })
    }

    /// This line as a `tool_call`.
    pub fn tool_call(&self) -> Option<ToolCall<'_>> {
        let data = self.of(EventType::ToolCall)?;
        Some(ToolCall {
            call_id: text(data, "call_id"),
            given_call_id: text(data, "given_call_id"),
            name: text(data, "name"),
            args: data.get("args"),
        })
    }

    /// This line as a `tool_result`.
    pub fn tool_result(&self) -> Option<ToolResult<'_>> {
        let data = self.of(EventType::ToolResult)?;
        Some(ToolResult {
            call_id: text(data, "call_id"),
            ok: data.get("ok").and_then(Value::as_bool),
            output: text(data, "output"),
            output_value: data.get("output"),
            error: data.get("error"),
            workflow: data.get("workflow"),
            outcome: data.get("outcome"),
            subagent: data.get("subagent"),
        })
    }

    /// The `call_id` of a `tool_call` or a `tool_result`.
    pub fn call_id(&self) -> Option<&str> {
        match self.kind.known()? {
            EventType::ToolCall | EventType::ToolResult => text(&self.data, "call_id"),
            _ => None,
        }
    }

    /// This line as a `subagent_event`.
    pub fn subagent_event(&self) -> Option<SubagentEvent<'_>> {
        let data = self.of(EventType::SubagentEvent)?;
        Some(SubagentEvent {
            subagent_id: text(data, "subagent_id"),
            agent: text(data, "agent"),
            status: text(data, "status"),
            event: text(data, "event"),
            summary: text(data, "summary"),
            reason: text(data, "reason"),
            child_session_id: text(data, "child_session_id"),
            child_log_path: text(data, "child_log_path"),
            elapsed_ms: data.get("elapsed_ms"),
            checkpoint: data.get("checkpoint"),
        })
    }

    /// This line as a `workflow_event`.
    pub fn workflow_event(&self) -> Option<WorkflowEvent<'_>> {
        let data = self.of(EventType::WorkflowEvent)?;
        Some(WorkflowEvent {
            workflow_id: text(data, "workflow_id"),
            kind: text(data, "kind"),
            step_id: text(data, "step_id"),
            wave: data.get("wave").and_then(Value::as_u64),
            checkpoint_status: text(data, "checkpoint_status"),
            subagent_status: text(data, "subagent_status"),
            reason: text(data, "reason"),
            ok: data.get("ok").and_then(Value::as_bool),
            dependent_safe: data.get("dependent_safe"),
            graph: data.get("graph"),
            limits: data.get("limits"),
        })
    }

    /// This line as a `history_compaction` or a `branch_summary`.
    pub fn summary(&self) -> Option<Summary<'_>> {
        let data = self.of(EventType::HistoryCompaction).or_else(|| self.of(EventType::BranchSummary))?;
        let bound = |key: &str| data.get("range")?.get(key)?.as_u64();
        Some(Summary {
            summary: text(data, "summary"),
            instruction: text(data, "instruction"),
            from_seq: bound("from_seq"),
            to_seq: bound("to_seq"),
        })
    }

    /// This line as a `reasoning` item.
    pub fn reasoning(&self) -> Option<Reasoning<'_>> {
        let data = self.of(EventType::Reasoning)?;
        Some(Reasoning { item: data.get("item"), model: text(data, "model") })
    }

    /// This line as a `provider_usage`.
    pub fn provider_usage(&self) -> Option<ProviderUsage<'_>> {
        let data = self.of(EventType::ProviderUsage)?;
        let count = |pointer: &str| data.pointer(pointer)?.as_u64();
        Some(ProviderUsage {
            model: text(data, "model"),
            input_tokens: count("/usage/input_tokens"),
            cached_tokens: count("/usage/input_tokens_details/cached_tokens"),
            output_tokens: count("/usage/output_tokens"),
            reasoning_tokens: count("/usage/output_tokens_details/reasoning_tokens"),
            total_tokens: count("/usage/total_tokens"),
        })
    }

    /// `data`, when the line is of type `kind`.
    fn of(&self, kind: EventType) -> Option<&Value> {
        (self.kind == kind).then_some(&self.data)
    }
}

/// The string at `key`; absent when it is missing or not a string.
fn text<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, data: &str) -> Line {
        Line::parse(&format!(r#"{{"type":"{kind}","seq":1,"data":{data}}}"#)).unwrap_or_else(|error| panic!("{error}"))
    }

    /// A view is its type's alone; a field left out or typed otherwise reads as absent, and the
    /// rest of the view still reads.
    #[test]
    fn a_view_reads_its_type_and_a_mistyped_field_as_absent() {
        let result = line("tool_result", r#"{"call_id":7,"ok":true,"output":"Buy milk.","error":{"kind":"x"}}"#);
        let view = result.tool_result().unwrap_or_else(|| panic!("a tool_result"));
        assert_eq!((view.call_id, view.ok, view.output), (None, Some(true), Some("Buy milk.")));
        assert_eq!(view.error_kind(), Some("x"));
        assert!(result.tool_call().is_none() && result.turn_failed().is_none());
        assert_eq!(result.call_id(), None);

        let partial = line(
            "assistant_message",
            r#"{"text":"Hal","metadata":{"partial":true,"terminal_status":"partial_failed","output_truncation":{"reason":"length"}}}"#,
        );
        let view = partial.assistant_message().unwrap_or_else(|| panic!("an assistant_message"));
        assert!(view.partial && partial.is_partial_assistant());
        assert_eq!(
            (view.text, view.terminal_status, view.truncation),
            (Some("Hal"), Some("partial_failed"), Some("length"))
        );

        let compaction = line("history_compaction", r#"{"summary":"S","range":{"from_seq":2,"to_seq":"9"}}"#);
        let view = compaction.summary().unwrap_or_else(|| panic!("a summary"));
        assert_eq!((view.summary, view.from_seq, view.to_seq), (Some("S"), Some(2), None));
    }
}
