//! Subagents: child Sessions with their own Log, spawned, waited on and closed by the model
//! through the `spawn_agent`, `wait_agent` and `close_agent` tools (ADR 0026 "Subagent
//! terminal states"; pixir.md 7; SUB-*).
//!
//! The parent's [`Subagents`] manager is the only writer of `subagent_event`s, and it writes
//! them into the parent's Log only at points the parent chooses: when a Turn starts, before
//! each Provider call, and while a delegation tool call is pending. Each child runs its one
//! Turn in its own task on tokio's clock, so a 120-second timeout costs nothing on a paused
//! clock, and reports how it ended through a channel. At most `max_subagents` children run at
//! once; the others wait `queued` and start, in spawn order, when the parent next looks. Parent state is a projection of the child's evidence: a child
//! whose Turn failed after partial text is `failed` with a `partial_*` reason, never
//! `completed`.
//!
//! A child that was queued or running when its manager went away is `detached` when the
//! parent Session opens again, with the path of its Log to inspect (SUB-DETACHED).

pub mod wait;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::control::{CancelSignal, LONGEST_WAIT, TurnOutcome, deadline_after};
use crate::event::{Data, EventType, LifecycleEvent, Payload, SubagentStatus, TerminalStatus, object};
use crate::log::LogError;
use crate::provider::Provider;
use crate::session::{STATE_DIR, Session, SessionConfig};
use crate::tools::Toolbox;

/// The default child timeout (pixir.md 7 defaults).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// How long `wait_agent` waits when the model gives no `timeout_ms`: longer than a default
/// child timeout, so a default wait ends with every child terminal.
pub const DEFAULT_WAIT_MS: u64 = 300_000;
/// Children cannot spawn children.
pub const MAX_DEPTH: u64 = 1;

/// A child Session the parent supervises.
#[derive(Debug)]
struct Child {
    id: String,
    session_id: String,
    agent: String,
    task: String,
    timeout_ms: u64,
    deadline_at: Option<String>,
    status: SubagentStatus,
    /// Sends a close reason to the running child; gone once it ended.
    close: Option<oneshot::Sender<String>>,
    /// The data of the last lifecycle event recorded for it.
    last: Data,
    /// What a queued child needs to start.
    pending: Option<Box<Pending>>,
}

/// A child that waits for a free slot (`max_subagents`); its Session (and Log) is opened
/// only when it starts, so a child closed while queued never has a Log.
#[derive(Debug)]
struct Pending {
    config: SessionConfig,
    provider: Provider,
    prompt: String,
    timeout: Duration,
    closed: oneshot::Receiver<String>,
}

/// How a child's task ended, as it reports to the parent.
#[derive(Debug)]
struct Notice {
    subagent_id: String,
    end: ChildEnd,
    elapsed_ms: u64,
}

#[derive(Debug)]
enum ChildEnd {
    /// The Turn ended by itself.
    Turn { outcome: TurnOutcome, answer: Option<String>, partial: bool },
    /// The timeout fired and the Turn was interrupted.
    TimedOut,
    /// The parent closed it while it ran.
    Closed { reason: String },
    /// The child's Log could not be written.
    LogFailed(String),
}

/// What one child is, for [`Session::launch_child`].
#[derive(Debug, Clone)]
pub(crate) struct ChildSpec {
    /// The child Session's id, also its route and Log file stem.
    pub session_id: String,
    /// The agent role.
    pub agent: String,
    /// The task as the parent states it.
    pub task: String,
    /// What the child is prompted with.
    pub prompt: String,
    /// Its timeout.
    pub timeout_ms: u64,
}

/// A tool failure: `ok: false` with `error{kind, message, details}` (ADR 0005 structured
/// errors): a spec the tool cannot run, never an agentic outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    /// `invalid_args`, `not_found`, `detached`, ...
    pub kind: &'static str,
    /// What is wrong.
    pub message: String,
    /// Structured evidence, e.g. `duplicates` or `missing`.
    pub details: Value,
}

impl ToolFailure {
    /// A failure with empty details.
    pub fn new(kind: &'static str, message: impl Into<String>) -> ToolFailure {
        ToolFailure { kind, message: message.into(), details: json!({}) }
    }

    /// The `tool_result` data.
    pub fn into_result(self) -> Data {
        object(json!({"ok": false, "error": {"kind": self.kind, "message": self.message, "details": self.details}}))
    }
}

/// The parent's manager: its children, in spawn order, and the channel they report on.
#[derive(Debug)]
pub struct Subagents {
    children: Vec<Child>,
    sender: mpsc::UnboundedSender<Notice>,
    notices: mpsc::UnboundedReceiver<Notice>,
    next_index: u64,
    /// At most this many children run at once; the rest stay queued.
    max_running: usize,
    /// The running children's tasks: a manager that goes away takes them with it, as a process
    /// that exits does, and the next manager finds them `detached` (SUB-DETACHED).
    tasks: JoinSet<()>,
}

impl Subagents {
    /// A manager restored from the parent's History: every child it knew, with the status its
    /// last lifecycle event gave it. Returns the `detached` events to record for children that
    /// were queued or running (SUB-DETACHED).
    pub(crate) fn restore(history: &[crate::event::Event], max_running: usize) -> (Subagents, Vec<Payload>) {
        let (sender, notices) = mpsc::unbounded_channel();
        let mut manager = Subagents {
            children: Vec::new(),
            sender,
            notices,
            next_index: 1,
            max_running: max_running.max(1),
            tasks: JoinSet::new(),
        };
        for event in history.iter().filter(|event| event.kind() == EventType::SubagentEvent) {
            let Some(id) = event.str_field("subagent_id") else { continue };
            let Some(status) = event.str_field("status").and_then(SubagentStatus::parse) else { continue };
            if let Some(index) = id.strip_prefix("sub_").and_then(|n| n.parse::<u64>().ok()) {
                manager.next_index = manager.next_index.max(index.saturating_add(1));
            }
            match manager.children.iter_mut().find(|child| child.id == id) {
                Some(child) => {
                    child.status = status;
                    child.last = event.data().clone();
                }
                None => manager.children.push(Child {
                    id: id.to_owned(),
                    session_id: event.str_field("child_session_id").unwrap_or(id).to_owned(),
                    agent: event.str_field("agent").unwrap_or("default").to_owned(),
                    task: event.str_field("task").unwrap_or_default().to_owned(),
                    timeout_ms: event.data().get("timeout_ms").and_then(Value::as_u64).unwrap_or(DEFAULT_TIMEOUT_MS),
                    deadline_at: event.str_field("deadline_at").map(str::to_owned),
                    status,
                    close: None,
                    last: event.data().clone(),
                    pending: None,
                }),
            }
        }
        let detached = manager
            .children
            .iter_mut()
            .filter(|child| !child.status.is_terminal())
            .map(|child| {
                let summary = format!(
                    "Subagent was {} in a previous runtime; no live runtime handle is available in this process. \
                     child_session_id={}; inspect its Log at {}.",
                    child.status,
                    child.session_id,
                    child_log_path(&child.session_id)
                );
                let extra = json!({
                    "summary": summary,
                    "reason": format!("no_live_handle_after_restore_while_{}", child.status),
                    "next_actions": ["inspect_child_session_log", "rerun_subagent_if_still_needed"],
                });
                let data = lifecycle_data(child, LifecycleEvent::Detached, extra);
                child.status = SubagentStatus::Detached;
                child.last = data.clone();
                Payload::subagent_event(data)
            })
            .collect();
        (manager, detached)
    }

    fn child(&self, id: &str) -> Option<&Child> {
        self.children.iter().find(|child| child.id == id)
    }

    fn child_mut(&mut self, id: &str) -> Option<&mut Child> {
        self.children.iter_mut().find(|child| child.id == id)
    }

    /// The status of a child, by subagent id.
    pub fn status(&self, id: &str) -> Option<SubagentStatus> {
        self.child(id).map(|child| child.status)
    }

    /// The data of the last lifecycle event of a child.
    pub(crate) fn last_event(&self, id: &str) -> Option<&Data> {
        self.child(id).map(|child| &child.last)
    }

    /// The next free subagent id, `sub_<n>`.
    pub(crate) fn next_id(&mut self) -> String {
        let id = format!("sub_{}", self.next_index);
        self.next_index += 1;
        id
    }
}

/// Where a child's Log lives, relative to the workspace.
pub fn child_log_path(session_id: &str) -> String {
    format!("{STATE_DIR}/sessions/{session_id}.ndjson")
}

/// The data of a lifecycle event of `child`, plus `extra` keys.
fn lifecycle_data(child: &Child, event: LifecycleEvent, extra: Value) -> Data {
    let mut data = object(json!({
        "event": event.as_str(),
        "status": event.status().as_str(),
        "subagent_id": child.id,
        "child_session_id": child.session_id,
        "child_log_path": child_log_path(&child.session_id),
        "agent": child.agent,
        "task": child.task,
        "depth": 1,
        "max_depth": MAX_DEPTH,
        "timeout_ms": child.timeout_ms,
    }));
    if let Some(deadline_at) = &child.deadline_at {
        data.insert("deadline_at".into(), json!(deadline_at));
    }
    data.extend(object(extra));
    data
}

/// The tool definitions of delegation: `spawn_agent`, `wait_agent`, `close_agent`.
pub fn definitions() -> Vec<Value> {
    vec![
        json!({
            "type": "function",
            "name": "close_agent",
            "description": "Close a subagent: cancels it if it runs, closes it if it ended.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false},
        }),
        json!({
            "type": "function",
            "name": "spawn_agent",
            "description": "Start a subagent: a child session with its own log that works on one task.",
            "parameters": {
                "type": "object",
                "properties": {
                    "task": {"type": "string"},
                    "agent": {"type": "string", "description": "Role, e.g. worker or explorer"},
                    "timeout_ms": {"type": "integer", "minimum": 1},
                },
                "required": ["task"],
                "additionalProperties": false,
            },
        }),
        json!({
            "type": "function",
            "name": "wait_agent",
            "description": "Wait until the given subagents (default: all) end, or the wait expires; returns per-status buckets.",
            "parameters": {
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}},
                    "timeout_ms": {"type": "integer", "minimum": 1},
                },
                "required": [],
                "additionalProperties": false,
            },
        }),
    ]
}

/// The definition of `delegate`, the synchronous delegation tool.
pub fn delegate_definition() -> Value {
    json!({
        "type": "function",
        "name": "delegate",
        "description": "Run a subagent on a task and wait for its answer: a child session with its own log.",
        "parameters": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string"},
                "description": {"type": "string", "description": "A short name for the task"},
                "agent": {"type": "string", "description": "Role, e.g. worker or explorer"},
                "timeout_ms": {"type": "integer", "minimum": 1},
            },
            "required": ["prompt"],
            "additionalProperties": false,
        },
    })
}

impl Subagents {
    /// Records what children reported since the last look, without waiting.
    pub(crate) fn drain(&mut self, session: &mut Session) -> Result<(), LogError> {
        while let Ok(notice) = self.notices.try_recv() {
            self.settle(session, notice)?;
        }
        Ok(())
    }

    /// Waits until every child in `ids` is terminal (`Ok(true)`) or `deadline` passes first
    /// (`Ok(false)`), recording reports as they come.
    pub(crate) async fn wait_terminal(
        &mut self,
        session: &mut Session,
        ids: &[String],
        deadline: Instant,
    ) -> Result<bool, LogError> {
        while !ids.iter().all(|id| self.status(id).is_some_and(SubagentStatus::is_terminal)) {
            if !self.next_notice(session, deadline).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Waits for the next report of any child, until `deadline`; `Ok(false)` when it passed.
    async fn next_notice(&mut self, session: &mut Session, deadline: Instant) -> Result<bool, LogError> {
        // A report that arrives with the deadline wins, so the outcome does not depend on a coin.
        let notice = tokio::select! {
            biased;
            notice = self.notices.recv() => notice,
            () = tokio::time::sleep_until(deadline) => None,
        };
        match notice {
            Some(notice) => self.settle(session, notice).map(|()| true),
            None => Ok(false),
        }
    }

    /// Records the terminal lifecycle event of a child's report.
    fn settle(&mut self, session: &mut Session, notice: Notice) -> Result<(), LogError> {
        let Some(child) = self.child_mut(&notice.subagent_id) else { return Ok(()) };
        child.close = None;
        let elapsed_ms = notice.elapsed_ms;
        let (event, extra) = match notice.end {
            ChildEnd::Turn { outcome, answer, .. } if outcome.status == TerminalStatus::Completed => {
                (LifecycleEvent::Finished, json!({"summary": answer.unwrap_or_default(), "elapsed_ms": elapsed_ms}))
            }
            ChildEnd::Turn { outcome, partial, .. } => {
                let kind = outcome.error_kind.map_or("child_turn_failed", |kind| kind.as_str());
                let reason = if partial { format!("partial_{kind}") } else { kind.to_owned() };
                let kept = if partial {
                    " Its partial text is kept in the child Log as evidence, not as a result."
                } else {
                    ""
                };
                let summary = format!(
                    "Child turn ended {} ({kind}): {}.{kept}",
                    outcome.status,
                    outcome.message.as_deref().unwrap_or("no message").trim_end_matches('.')
                );
                let next_actions = [
                    "inspect_child_session_log".to_owned(),
                    format!("rerun_subagent_after_fixing_{reason}"),
                    "reduce_task_scope".to_owned(),
                ];
                (
                    LifecycleEvent::Failed,
                    json!({"summary": summary, "reason": reason, "elapsed_ms": elapsed_ms, "next_actions": next_actions}),
                )
            }
            ChildEnd::TimedOut => {
                let summary = format!(
                    "Timed out after {elapsed_ms}ms (configured timeout {}ms). The runtime interrupted the child \
                     Session; inspect child_session_id={} or retry with a larger timeout.",
                    child.timeout_ms, child.session_id
                );
                (
                    LifecycleEvent::TimedOut,
                    json!({
                        "summary": summary,
                        "reason": "timeout",
                        "elapsed_ms": elapsed_ms,
                        "next_actions": ["inspect_child_session_log", "retry_subagent_with_larger_timeout", "reduce_task_scope"],
                    }),
                )
            }
            ChildEnd::Closed { reason } => {
                let summary = format!(
                    "Cancelled after {elapsed_ms}ms ({reason}); the child Session was interrupted. child_session_id={}.",
                    child.session_id
                );
                (
                    LifecycleEvent::Cancelled,
                    json!({
                        "summary": summary,
                        "reason": reason,
                        "elapsed_ms": elapsed_ms,
                        "next_actions": ["inspect_child_session_log", "rerun_subagent_if_still_needed"],
                    }),
                )
            }
            ChildEnd::LogFailed(message) => (
                LifecycleEvent::Failed,
                json!({
                    "summary": format!("The child Log could not be written: {message}"),
                    "reason": "child_log_error",
                    "elapsed_ms": elapsed_ms,
                    "next_actions": ["inspect_child_session_log"],
                }),
            ),
        };
        let data = lifecycle_data(child, event, extra);
        child.status = event.status();
        child.last = data.clone();
        session.record(Payload::subagent_event(data))?;
        // A slot is free: a queued child may start.
        self.start_queued(session)
    }

    /// Opens a child Session and starts its Turn in its own task; records `queued`, then
    /// `started`. Returns the subagent id; a Log that cannot be written fails the Turn, as
    /// everywhere else.
    pub(crate) fn launch_child(&mut self, session: &mut Session, spec: ChildSpec) -> Result<String, LogError> {
        let parent = session.config();
        let mut config = SessionConfig::new(&spec.session_id, &parent.workspace);
        config.model.clone_from(&parent.model);
        config.turn_timeout = parent.turn_timeout;
        config.instructions = format!(
            "{}\n\nSubagent role instructions:\nYou are the `{}` subagent of session {}. Do the task, then answer \
             with a concise summary of the result.",
            parent.instructions, spec.agent, parent.session_id
        );
        // Session::open tags the provider with the child's Session id.
        let provider = session.provider.clone();
        let (close, closed) = oneshot::channel();
        let id = self.next_id();
        let mut child = Child {
            id: id.clone(),
            session_id: spec.session_id,
            agent: spec.agent,
            task: spec.task,
            timeout_ms: spec.timeout_ms,
            deadline_at: None,
            status: SubagentStatus::Queued,
            close: Some(close),
            last: Data::new(),
            pending: Some(Box::new(Pending {
                config,
                provider,
                prompt: spec.prompt,
                timeout: Duration::from_millis(spec.timeout_ms),
                closed,
            })),
        };
        let queued = lifecycle_data(&child, LifecycleEvent::Queued, json!({}));
        child.last = queued.clone();
        self.children.push(child);
        session.record(Payload::subagent_event(queued))?;
        self.start_queued(session)?;
        Ok(id)
    }

    /// Starts queued children, in spawn order, while fewer than `max_subagents` run; records
    /// `started` with the deadline for each.
    fn start_queued(&mut self, session: &mut Session) -> Result<(), LogError> {
        loop {
            let n_running = self.children.iter().filter(|child| child.status == SubagentStatus::Running).count();
            if n_running >= self.max_running {
                return Ok(());
            }
            let next = self
                .children
                .iter_mut()
                .find(|child| child.status == SubagentStatus::Queued && child.pending.is_some());
            let Some(child) = next else { return Ok(()) };
            let Some(pending) = child.pending.take() else { return Ok(()) };
            let Pending { config, provider, prompt, timeout, closed } = *pending;
            match Session::open(config, provider, session.ids.clone(), session.clock.clone()) {
                Ok(child_session) => {
                    child.deadline_at = session.clock.timestamp_after(timeout);
                    child.status = SubagentStatus::Running;
                    let started = lifecycle_data(child, LifecycleEvent::Started, json!({}));
                    child.last = started.clone();
                    self.tasks.spawn(run_child(
                        child_session,
                        prompt,
                        timeout,
                        closed,
                        self.sender.clone(),
                        child.id.clone(),
                    ));
                    session.record(Payload::subagent_event(started))?;
                }
                Err(error) => {
                    let failed = lifecycle_data(
                        child,
                        LifecycleEvent::Failed,
                        json!({
                            "summary": format!("The child Session could not open its Log: {error}"),
                            "reason": "child_log_error",
                            "elapsed_ms": 0,
                            "next_actions": ["inspect_child_session_log"],
                        }),
                    );
                    child.status = SubagentStatus::Failed;
                    child.close = None;
                    child.last = failed.clone();
                    session.record(Payload::subagent_event(failed))?;
                }
            }
        }
    }

    /// Asks a running child to stop for `reason` and waits until its end is recorded.
    pub(crate) async fn close_running(
        &mut self,
        session: &mut Session,
        id: &str,
        reason: &str,
    ) -> Result<(), LogError> {
        let close = self.child_mut(id).and_then(|child| child.close.take());
        // Without a handle there is no task to report back: nothing to wait for.
        let Some(close) = close else { return Ok(()) };
        let _ = close.send(reason.to_owned());
        while self.status(id).is_some_and(|status| !status.is_terminal()) {
            if !self.next_notice(session, deadline_after(Duration::from_secs(86_400))).await? {
                break;
            }
        }
        Ok(())
    }

    /// `spawn_agent {task, agent?, timeout_ms?}`.
    pub(crate) fn spawn_agent(&mut self, session: &mut Session, args: &Value) -> Result<Data, LogError> {
        let Some(task) = args.get("task").and_then(Value::as_str).filter(|task| !task.trim().is_empty()) else {
            return Ok(ToolFailure::new("invalid_args", "`task` must be a non-empty string").into_result());
        };
        let agent = args.get("agent").and_then(Value::as_str).unwrap_or("default").to_owned();
        let timeout_ms = match positive(args, "timeout_ms", DEFAULT_TIMEOUT_MS) {
            Ok(ms) => ms,
            Err(failure) => return Ok(failure.into_result()),
        };
        let spec = ChildSpec {
            session_id: format!("sub_{}", self.next_index),
            agent,
            task: task.to_owned(),
            prompt: task.to_owned(),
            timeout_ms,
        };
        let id = self.launch_child(session, spec)?;
        let view = view(&self.last_event(&id).cloned().unwrap_or_default());
        let field = |key: &str| view.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(object(json!({
            "ok": true,
            "output": format!("Spawned {id} ({}): {}, timeout {timeout_ms}ms.", field("agent"), field("status")),
            "subagent": view,
        })))
    }

    /// `delegate {prompt, description?, agent?, timeout_ms?}`: a child that works on `prompt`,
    /// waited for until it ends, its answer the call's result, as an agent's own synchronous
    /// delegation tool does (Claude Code's `Task`, opencode's `task`). A child that did not
    /// complete is a failed call, its status and summary in the error: never its partial
    /// text as a finished result (SUB-PARTIAL-NOT-COMPLETED).
    pub(crate) async fn delegate(&mut self, session: &mut Session, args: &Value) -> Result<Data, LogError> {
        let Some(prompt) = args.get("prompt").and_then(Value::as_str).filter(|prompt| !prompt.trim().is_empty()) else {
            return Ok(ToolFailure::new("invalid_args", "`prompt` must be a non-empty string").into_result());
        };
        let timeout_ms = match positive(args, "timeout_ms", DEFAULT_TIMEOUT_MS) {
            Ok(ms) => ms,
            Err(failure) => return Ok(failure.into_result()),
        };
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let spec = ChildSpec {
            session_id: format!("sub_{}", self.next_index),
            agent: text("agent").unwrap_or_else(|| "default".to_owned()),
            task: text("description").unwrap_or_else(|| prompt.to_owned()),
            prompt: prompt.to_owned(),
            timeout_ms,
        };
        let id = self.launch_child(session, spec)?;
        // The child ends by its own timeout; the wait has none of its own.
        self.wait_terminal(session, std::slice::from_ref(&id), deadline_after(LONGEST_WAIT)).await?;
        let view = view(&self.last_event(&id).cloned().unwrap_or_default());
        let field = |key: &str| view.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        if self.status(&id) == Some(SubagentStatus::Completed) {
            return Ok(object(json!({"ok": true, "output": field("summary"), "subagent": view})));
        }
        let message = format!("{id} ended {}: {}", field("status"), field("summary"));
        let mut failure = ToolFailure::new("subagent_not_completed", message);
        failure.details = json!({"subagent": view});
        Ok(failure.into_result())
    }

    /// `wait_agent {ids?, timeout_ms?}`: waits until every listed child is terminal or the wait
    /// expires, then returns the structured outcome (SUB-WAIT-OUTCOME).
    pub(crate) async fn wait_agent(&mut self, session: &mut Session, args: &Value) -> Result<Data, LogError> {
        let timeout_ms = match positive(args, "timeout_ms", DEFAULT_WAIT_MS) {
            Ok(ms) => ms,
            Err(failure) => return Ok(failure.into_result()),
        };
        let ids: Vec<String> = match args.get("ids").and_then(Value::as_array) {
            Some(ids) => ids.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => self.children.iter().map(|child| child.id.clone()).collect(),
        };
        if ids.is_empty() {
            // Waiting on nothing must not read as a completed fan-out.
            return Ok(ToolFailure::new("not_found", "there are no subagents to wait for").into_result());
        }
        let unknown: Vec<&String> = ids.iter().filter(|id| self.child(id).is_none()).collect();
        if !unknown.is_empty() {
            let mut failure = ToolFailure::new("not_found", "no subagent with these ids");
            failure.details = json!({"ids": unknown});
            return Ok(failure.into_result());
        }
        let deadline = deadline_after(Duration::from_millis(timeout_ms));
        self.drain(session)?;
        self.wait_terminal(session, &ids, deadline).await?;
        let statuses: Vec<(String, SubagentStatus)> =
            ids.iter().filter_map(|id| self.status(id).map(|status| (id.clone(), status))).collect();
        let (_, mut outcome) = wait::outcome(&statuses, timeout_ms);
        outcome["observed_at"] = json!(session.clock.timestamp());
        let views: Vec<Value> = ids.iter().filter_map(|id| self.last_event(id)).map(view).collect();
        let mut output = outcome["summary"].as_str().unwrap_or_default().to_owned();
        for view in &views {
            let field = |key: &str| view.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            // A child without a summary yet is named by its task.
            let about = if field("summary").is_empty() { field("task") } else { field("summary") };
            output.push_str(&format!("\n- {} ({}) {}: {}", field("id"), field("agent"), field("status"), about));
        }
        Ok(object(json!({"ok": true, "output": output, "subagents": views, "outcome": outcome})))
    }

    /// `close_agent {id}`: running is cancelled, ended is closed, detached and closed refuse.
    pub(crate) async fn close_agent(&mut self, session: &mut Session, args: &Value) -> Result<Data, LogError> {
        let Some(id) = args.get("id").and_then(Value::as_str).map(str::to_owned) else {
            return Ok(ToolFailure::new("invalid_args", "`id` must be a string").into_result());
        };
        self.drain(session)?;
        let Some(status) = self.status(&id) else {
            return Ok(ToolFailure::new("not_found", format!("no subagent `{id}`")).into_result());
        };
        match status {
            SubagentStatus::Running => self.close_running(session, &id, "cancelled_by_parent").await?,
            SubagentStatus::Queued => {
                let Some(child) = self.child_mut(&id) else {
                    return Ok(Data::new());
                };
                child.pending = None;
                child.close = None;
                let data = lifecycle_data(
                    child,
                    LifecycleEvent::Closed,
                    json!({"summary": "Closed by the parent before it started.", "reason": "closed_before_start"}),
                );
                child.status = SubagentStatus::Closed;
                child.last = data.clone();
                session.record(Payload::subagent_event(data))?;
            }
            SubagentStatus::Detached => {
                let mut failure = ToolFailure::new("detached", format!("`{id}` is detached: no live runtime handle"));
                failure.details =
                    json!({"child_log_path": self.child(&id).map(|child| child_log_path(&child.session_id))});
                return Ok(failure.into_result());
            }
            SubagentStatus::Closed => {
                return Ok(ToolFailure::new("already_closed", format!("`{id}` is already closed")).into_result());
            }
            SubagentStatus::Completed
            | SubagentStatus::Failed
            | SubagentStatus::TimedOut
            | SubagentStatus::Cancelled => {
                let Some(child) = self.child_mut(&id) else {
                    return Ok(Data::new());
                };
                let data = lifecycle_data(
                    child,
                    LifecycleEvent::Closed,
                    json!({"summary": format!("Closed by the parent after it was {status}."), "reason": "closed_by_parent"}),
                );
                child.status = SubagentStatus::Closed;
                child.last = data.clone();
                session.record(Payload::subagent_event(data))?;
            }
        }
        let last = self.last_event(&id).cloned().unwrap_or_default();
        let view = view(&last);
        let output = format!(
            "Closed {id}: {} ({}).",
            view["status"].as_str().unwrap_or_default(),
            view["reason"].as_str().unwrap_or_default()
        );
        Ok(object(json!({"ok": true, "output": output, "subagent": view})))
    }
}

/// A child as tool results show it: its last lifecycle event, without the event name.
fn view(data: &Data) -> Value {
    let mut view = data.clone();
    view.remove("event");
    if let Some(id) = view.remove("subagent_id") {
        view.insert("id".into(), id);
    }
    Value::Object(view)
}

/// A positive integer argument, or its default.
pub(crate) fn positive(args: &Value, key: &str, default: u64) -> Result<u64, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| ToolFailure::new("invalid_args", format!("`{key}` must be a positive integer"))),
    }
}

/// One child's life: its Turn, raced against its timeout and a close from the parent.
async fn run_child(
    mut session: Session,
    prompt: String,
    timeout: Duration,
    closed: oneshot::Receiver<String>,
    notices: mpsc::UnboundedSender<Notice>,
    subagent_id: String,
) {
    let started = Instant::now();
    let (cancel, mut signal) = CancelSignal::pair();
    let mut stop: Option<ChildEnd> = None;
    let result = {
        let mut tools = Toolbox::workspace();
        let turn = session.prompt(&mut tools, &prompt, &mut signal);
        tokio::pin!(turn);
        let mut closed = closed;
        let mut closed_open = true;
        loop {
            tokio::select! {
                biased;
                result = &mut turn => break result,
                () = tokio::time::sleep_until(started + timeout.min(LONGEST_WAIT)), if stop.is_none() => {
                    stop = Some(ChildEnd::TimedOut);
                    cancel.cancel();
                }
                reason = &mut closed, if closed_open && stop.is_none() => {
                    closed_open = false;
                    if let Ok(reason) = reason {
                        stop = Some(ChildEnd::Closed { reason });
                        cancel.cancel();
                    }
                }
            }
        }
    };
    let end = match (result, stop) {
        (Err(error), _) => ChildEnd::LogFailed(error.to_string()),
        (Ok(_), Some(stop)) => stop,
        (Ok(outcome), None) => {
            let history = session.history();
            let partial = history
                .iter()
                .rev()
                .take_while(|e| e.kind() != EventType::UserMessage)
                .any(|e| e.is_partial_assistant());
            let answer = history
                .iter()
                .rev()
                .find(|event| event.kind() == EventType::AssistantMessage && !event.is_partial_assistant())
                .and_then(|event| event.str_field("text"))
                .map(str::to_owned);
            ChildEnd::Turn { outcome, answer, partial }
        }
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let _ = notices.send(Notice { subagent_id, end, elapsed_ms });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    fn lifecycle(seq: u64, event: &str, status: &str, id: &str) -> Event {
        let data = object(json!({
            "event": event, "status": status, "subagent_id": id, "child_session_id": id,
            "agent": "worker", "task": "t", "timeout_ms": 120_000,
        }));
        Event::stamp(Payload::subagent_event(data), "root", seq.to_string(), "t".into(), Some(seq))
    }

    #[test]
    fn restore_detaches_live_children_and_continues_the_numbering() {
        let history = [
            lifecycle(0, "queued", "queued", "sub_1"),
            lifecycle(1, "started", "running", "sub_1"),
            lifecycle(2, "queued", "queued", "sub_2"),
            lifecycle(3, "started", "running", "sub_2"),
            lifecycle(4, "finished", "completed", "sub_2"),
        ];
        let (mut manager, detached) = Subagents::restore(&history, 6);
        assert_eq!(detached.len(), 1);
        assert_eq!(detached[0].data()["event"], "detached");
        assert_eq!(detached[0].data()["child_log_path"], ".gauntlet/sessions/sub_1.ndjson");
        assert_eq!(manager.status("sub_1"), Some(SubagentStatus::Detached));
        assert_eq!(manager.status("sub_2"), Some(SubagentStatus::Completed));
        assert_eq!(manager.next_id(), "sub_3");
    }
}
