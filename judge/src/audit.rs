//! The Log auditor: any NDJSON Log to per-turn terminal states, from the Log alone
//! (ADR 0026 "Turn terminal states"; TURN-TERMINAL-EVIDENCE).
//!
//! It reads raw lines rather than runtime types so it can judge a Log written by any
//! implementation, in any language.

pub mod diagnostics;
pub mod subagents;
pub mod workflows;

use std::collections::BTreeMap;

use gauntlet_agent::EventType;
use gauntlet_agent::TerminalStatus;

use crate::log_line::{Line, parse_lines};
use serde::Serialize;

pub use diagnostics::{Diagnostic, DiagnosticKind};
pub use subagents::{SubagentAudit, SubagentTerminal};
pub use workflows::{WorkflowAudit, WorkflowTerminal};

/// What the Log says about one turn: the events from a `user_message` to the next.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnAudit {
    /// The seq of the turn's `user_message`.
    pub user_seq: u64,
    /// The terminal state the evidence supports; `None` when there is no terminal evidence.
    pub terminal_status: Option<TerminalStatus>,
    /// `turn_failed.error_kind`, or the partial message's `metadata.error_kind`.
    pub error_kind: Option<String>,
    /// The seqs of the terminal evidence (clean answer, partial answer, `turn_failed`).
    pub evidence_seqs: Vec<u64>,
}

/// The whole Log, audited.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Audit {
    /// One entry per `user_message`, in order.
    pub turns: Vec<TurnAudit>,
    /// The `user_message` seqs of turns with no terminal evidence: left open by a crash, or
    /// (the last one only) still running when the Log was read (TURN-RESTART-RECOVERY).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unterminated: Vec<u64>,
    /// Lines that are not Events: `(1-based line, reason)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<(usize, String)>,
    /// Each Subagent of the root Session and how it ended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentAudit>,
    /// Each Workflow of the root Session and how it ended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowAudit>,
}

/// Derives each turn's terminal state from Log lines.
pub fn audit(lines: &[String]) -> Audit {
    audit_with_children(lines, &BTreeMap::new())
}

/// [`audit`] of the root Log, with what the child Logs say about each child's Turn.
pub fn audit_with_children(lines: &[String], children: &BTreeMap<String, Vec<String>>) -> Audit {
    let (parsed, unreadable) = parse_lines(lines);
    audit_parsed(&parsed, unreadable, children)
}

/// [`audit_with_children`] of a Log already parsed ([`parse_lines`]), so a reader that keeps the
/// lines parses each once.
pub fn audit_parsed(
    parsed: &[Line],
    unreadable: Vec<(usize, String)>,
    children: &BTreeMap<String, Vec<String>>,
) -> Audit {
    let mut turns = Vec::new();
    let starts: Vec<usize> =
        parsed.iter().enumerate().filter(|(_, l)| l.kind == EventType::UserMessage).map(|(i, _)| i).collect();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(parsed.len());
        turns.push(audit_turn(&parsed[start], &parsed[start + 1..end]));
    }
    let unterminated = turns.iter().filter(|turn| turn.terminal_status.is_none()).map(|turn| turn.user_seq).collect();
    let subagents = subagents::audit(parsed, children);
    let workflows = workflows::audit(parsed);
    Audit { turns, unterminated, unreadable, subagents, workflows }
}

fn audit_turn(user: &Line, events: &[Line]) -> TurnAudit {
    let mut audit = TurnAudit {
        user_seq: user.seq.unwrap_or(0),
        terminal_status: None,
        error_kind: None,
        evidence_seqs: Vec::new(),
    };
    let failed = events.iter().find_map(|line| Some((line.turn_failed()?, line.seq)));
    let partial =
        events.iter().find_map(|line| Some((line.assistant_message().filter(|message| message.partial)?, line.seq)));
    if let Some((failed, seq)) = failed {
        audit.terminal_status = failed.terminal_status.and_then(TerminalStatus::parse);
        audit.error_kind = failed.error_kind.map(str::to_owned);
        audit.evidence_seqs.extend(partial.and_then(|(_, seq)| seq));
        audit.evidence_seqs.extend(seq);
        return audit;
    }
    if let Some((partial, seq)) = partial {
        // "Equivalent terminal failure metadata" on the partial message itself (ADR 0026).
        audit.terminal_status = partial.terminal_status.and_then(TerminalStatus::parse);
        audit.error_kind = partial.error_kind.map(str::to_owned);
        audit.evidence_seqs.extend(seq);
        return audit;
    }
    // Completed: the last assistant_message is clean and no tool call follows it.
    let last_answer = events.iter().rposition(|line| line.kind == EventType::AssistantMessage);
    let last_call = events.iter().rposition(|line| line.kind == EventType::ToolCall);
    if let Some(answer) = last_answer
        && last_call.is_none_or(|call| call < answer)
    {
        audit.terminal_status = Some(TerminalStatus::Completed);
        audit.evidence_seqs.extend(events[answer].seq);
    }
    audit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(events: &[(&str, &str)]) -> Vec<String> {
        events
            .iter()
            .enumerate()
            .map(|(seq, (kind, data))| {
                format!(r#"{{"data":{data},"id":"x","seq":{seq},"session_id":"s","ts":"t","type":"{kind}"}}"#)
            })
            .collect()
    }

    #[test]
    fn derives_each_terminal_state() {
        let log = lines(&[
            ("user_message", r#"{"text":"a"}"#),
            ("provider_usage", "{}"),
            ("assistant_message", r#"{"text":"done"}"#),
            ("user_message", r#"{"text":"b"}"#),
            ("assistant_message", r#"{"text":"ha","metadata":{"partial":true,"terminal_status":"partial_failed"}}"#),
            ("turn_failed", r#"{"terminal_status":"partial_failed","error_kind":"network"}"#),
            ("user_message", r#"{"text":"c"}"#),
            ("tool_call", r#"{"call_id":"c1","name":"read","args":{}}"#),
        ]);
        let audit = audit(&log);
        let states: Vec<_> = audit.turns.iter().map(|t| t.terminal_status).collect();
        assert_eq!(states, [Some(TerminalStatus::Completed), Some(TerminalStatus::PartialFailed), None]);
        assert_eq!(audit.turns[1].error_kind.as_deref(), Some("network"));
        assert_eq!(audit.turns[1].evidence_seqs, [4, 5]);
        assert_eq!(audit.unterminated, [6], "the open turn is reported unterminated");
    }

    #[test]
    fn unreadable_lines_are_reported() {
        let audit = audit(&["{not json".to_owned(), r#"{"type": 7}"#.to_owned()]);
        assert_eq!(audit.unreadable.len(), 2);
        assert!(audit.unreadable[0].1.starts_with("key must be a string at line 1 column 2"), "{:?}", audit.unreadable);
        assert_eq!(audit.unreadable[1], (2, "no string `type`".to_owned()));
        assert!(matches!(Line::parse("{}"), Err(crate::log_line::LineError::NoType)));
    }
}
