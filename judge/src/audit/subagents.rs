//! Subagent terminal states from the parent's Log and the child Logs (ADR 0026 "Subagent
//! terminal states"; SUB-TERMINAL-EVIDENCE).
//!
//! A child's state is its last `subagent_event` in the parent's Log; the auditor then names
//! it in the ADR's vocabulary (a `failed` child with a `partial_*` reason is
//! `partial_failed`, a cancelled one `interrupted`) and adds what the child's own Log says
//! about its Turn, so a summary the parent calls completed can be checked against it.

use std::collections::BTreeMap;

use gauntlet_agent::TerminalStatus;
use gauntlet_agent::event::{LifecycleEvent, SubagentStatus};
use serde::Serialize;

use crate::log_line::Line;

/// The ADR 0026 name of how a Subagent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentTerminal {
    /// Completed with a usable summary.
    Completed,
    /// Failed after useful partial text (a `partial_*` reason).
    PartialFailed,
    /// Failed.
    Failed,
    /// Ran past its timeout.
    TimedOut,
    /// Cancelled by its parent.
    Interrupted,
    /// No manager controls it any more.
    Detached,
    /// Closed by its parent.
    Closed,
}

/// What the Logs say about one Subagent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentAudit {
    /// Its id in the parent, e.g. `sub_1`.
    pub subagent_id: String,
    /// Its child Session.
    pub child_session_id: String,
    /// Its last lifecycle status in the parent's Log.
    pub status: Option<SubagentStatus>,
    /// The ADR 0026 terminal state; `None` while queued or running.
    pub terminal_state: Option<SubagentTerminal>,
    /// The terminal event's `reason`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The lifecycle events in the parent's Log, in order.
    pub events: Vec<String>,
    /// The terminal state of the child's last Turn, from its own Log (when captured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_turn: Option<TerminalStatus>,
}

/// Every Subagent of the parent Log, in first-seen order.
pub fn audit(lines: &[Line], children: &BTreeMap<String, Vec<String>>) -> Vec<SubagentAudit> {
    let mut found: Vec<SubagentAudit> = Vec::new();
    for event in lines.iter().filter_map(Line::subagent_event) {
        let Some(id) = event.subagent_id else { continue };
        let entry = match found.iter().position(|audit| audit.subagent_id == id) {
            Some(idx) => &mut found[idx],
            None => {
                found.push(SubagentAudit {
                    subagent_id: id.to_owned(),
                    child_session_id: event.child_session_id.unwrap_or_default().to_owned(),
                    status: None,
                    terminal_state: None,
                    reason: None,
                    events: Vec::new(),
                    child_turn: None,
                });
                let last = found.len() - 1;
                &mut found[last]
            }
        };
        entry.events.push(event.event.unwrap_or("?").to_owned());
        entry.status = event.subagent_status();
        entry.reason = event.reason.map(str::to_owned);
        entry.terminal_state = entry.status.and_then(|status| terminal(status, entry.reason.as_deref()));
    }
    for entry in &mut found {
        if let Some(child_log) = children.get(&entry.child_session_id) {
            entry.child_turn = super::audit(child_log).turns.last().and_then(|turn| turn.terminal_status);
        }
    }
    found
}

/// The ADR 0026 name for a lifecycle status and its reason.
pub fn terminal(status: SubagentStatus, reason: Option<&str>) -> Option<SubagentTerminal> {
    Some(match status {
        SubagentStatus::Queued | SubagentStatus::Running => return None,
        SubagentStatus::Completed => SubagentTerminal::Completed,
        SubagentStatus::Failed if reason.is_some_and(|reason| reason.starts_with("partial_")) => {
            SubagentTerminal::PartialFailed
        }
        SubagentStatus::Failed => SubagentTerminal::Failed,
        SubagentStatus::TimedOut => SubagentTerminal::TimedOut,
        SubagentStatus::Cancelled => SubagentTerminal::Interrupted,
        SubagentStatus::Detached => SubagentTerminal::Detached,
        SubagentStatus::Closed => SubagentTerminal::Closed,
    })
}

/// True for a `subagent_event` whose `event` is one the parent's model may see (pixir.md 3.2).
pub fn is_replayed_event(line: &Line) -> bool {
    line.subagent_event().and_then(|event| event.lifecycle_event()).is_some_and(LifecycleEvent::is_replayed)
}

#[cfg(test)]
mod tests {
    use gauntlet_agent::EventType;
    use serde_json::Value;

    use super::*;
    use crate::event_kind::EventKind;

    fn line(data: Value) -> Line {
        Line { id: None, seq: Some(0), kind: EventKind::Known(EventType::SubagentEvent), data }
    }

    #[test]
    fn the_last_event_decides_and_partial_reasons_are_partial_failed() {
        let lines = [
            line(
                serde_json::json!({"event": "queued", "status": "queued", "subagent_id": "sub_1", "child_session_id": "sub_1"}),
            ),
            line(
                serde_json::json!({"event": "failed", "status": "failed", "subagent_id": "sub_1", "reason": "partial_network"}),
            ),
            line(
                serde_json::json!({"event": "started", "status": "running", "subagent_id": "sub_2", "child_session_id": "sub_2"}),
            ),
        ];
        let audits = audit(&lines, &BTreeMap::new());
        assert_eq!(audits[0].terminal_state, Some(SubagentTerminal::PartialFailed));
        assert_eq!(audits[0].events, ["queued", "failed"]);
        assert_eq!(audits[1].terminal_state, None);
    }
}
