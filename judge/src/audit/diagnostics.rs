//! The warnings seed 000's `SessionDiagnostics` gives over a Session's Log: missing assistant
//! evidence, missing failure evidence, preserved partial assistants, durable turn failures and
//! Subagent timeout evidence. They are not findings: a Log can be right and still hold a
//! failure worth a look; `gauntlet audit` prints them per Session with the seq they point at.

use gauntlet_agent::EventType;
use serde::Serialize;

use super::{Audit, SubagentTerminal};
use crate::log_line::Line;

/// What a diagnostic warns about, in the seed's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// A turn with no assistant message and no `turn_failed`: nothing says how it ended.
    MissingAssistantEvidence,
    /// A turn whose partial assistant message has no `turn_failed` after it.
    MissingFailureEvidence,
    /// A partial assistant message kept in the Log (evidence, never replayed).
    PreservedPartialAssistant,
    /// A `turn_failed`: the turn's failure is durable.
    DurableTurnFailure,
    /// A Subagent that timed out.
    SubagentTimeout,
}

impl DiagnosticKind {
    /// The seed's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingAssistantEvidence => "missing assistant evidence",
            Self::MissingFailureEvidence => "missing failure evidence",
            Self::PreservedPartialAssistant => "preserved partial assistant",
            Self::DurableTurnFailure => "durable turn failure",
            Self::SubagentTimeout => "Subagent timeout evidence",
        }
    }
}

/// One warning, with the seq of the event it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What it warns about.
    pub kind: DiagnosticKind,
    /// The event it points at (the turn's `user_message` when the evidence is missing).
    pub seq: Option<u64>,
    /// What the Log holds.
    pub message: String,
}

/// The Session's diagnostics, in Log order within each kind of turn evidence.
pub fn diagnostics(audit: &Audit, lines: &[Line]) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let mut turn = 0;
    let mut open: Option<TurnEvidence> = None;
    let close = |open: Option<TurnEvidence>, found: &mut Vec<Diagnostic>| {
        let Some(evidence) = open else { return };
        if evidence.failed {
            return;
        }
        let (kind, what) = match (evidence.clean, evidence.partial) {
            (false, false) => (DiagnosticKind::MissingAssistantEvidence, "no assistant message and no turn_failed"),
            (false, true) => (DiagnosticKind::MissingFailureEvidence, "a partial assistant message but no turn_failed"),
            _ => return,
        };
        found.push(Diagnostic {
            kind,
            seq: Some(evidence.user_seq),
            message: format!("turn {} (user_message seq {}) has {what}", evidence.turn, evidence.user_seq),
        });
    };
    for line in lines {
        let seq = line.seq;
        match line.kind.known() {
            Some(EventType::UserMessage) => {
                close(open.take(), &mut found);
                turn += 1;
                open = Some(TurnEvidence { turn, user_seq: seq.unwrap_or_default(), ..TurnEvidence::default() });
            }
            Some(EventType::AssistantMessage) if line.is_partial_assistant() => {
                if let Some(open) = open.as_mut() {
                    open.partial = true;
                }
                let text = line.assistant_message().and_then(|message| message.text).unwrap_or_default();
                found.push(Diagnostic {
                    kind: DiagnosticKind::PreservedPartialAssistant,
                    seq,
                    message: format!("turn {turn} keeps the partial assistant text {text:?}"),
                });
            }
            Some(EventType::AssistantMessage) => {
                if let Some(open) = open.as_mut() {
                    open.clean = true;
                }
            }
            Some(EventType::TurnFailed) => {
                if let Some(open) = open.as_mut() {
                    open.failed = true;
                }
                let failed = line.turn_failed();
                let status = failed.and_then(|failed| failed.terminal_status).unwrap_or("failed");
                let kind = failed.and_then(|failed| failed.error_kind).unwrap_or("-");
                found.push(Diagnostic {
                    kind: DiagnosticKind::DurableTurnFailure,
                    seq,
                    message: format!("turn {turn} ended {status} ({kind})"),
                });
            }
            _ => {}
        }
    }
    // The last turn may still be running: only an earlier turn lacks its evidence for sure.
    if audit.unterminated.last() != open.as_ref().map(|open| open.user_seq).as_ref() {
        close(open, &mut found);
    }
    for subagent in &audit.subagents {
        if subagent.terminal_state == Some(SubagentTerminal::TimedOut) {
            let id = subagent.subagent_id.as_str();
            let last_event = lines
                .iter()
                .rev()
                .find(|line| line.subagent_event().is_some_and(|event| event.subagent_id == Some(id)));
            found.push(Diagnostic {
                kind: DiagnosticKind::SubagentTimeout,
                seq: last_event.and_then(|line| line.seq),
                message: format!("Subagent {} timed out", subagent.subagent_id),
            });
        }
    }
    found
}

/// What one turn's events hold so far.
#[derive(Debug, Default)]
struct TurnEvidence {
    turn: usize,
    user_seq: u64,
    clean: bool,
    partial: bool,
    failed: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn log(events: &[(&str, serde_json::Value)]) -> Vec<String> {
        events
            .iter()
            .enumerate()
            .map(|(seq, (kind, data))| {
                json!({"type": kind, "seq": seq, "id": format!("{seq}"), "data": data}).to_string()
            })
            .collect()
    }

    #[test]
    fn a_preserved_partial_a_durable_failure_and_missing_evidence_are_each_named() {
        let lines = log(&[
            ("user_message", json!({"text": "one"})),
            ("assistant_message", json!({"text": "Useful par", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed", "error_kind": "network"})),
            ("user_message", json!({"text": "two"})),
            ("user_message", json!({"text": "three"})),
            ("assistant_message", json!({"text": "Half", "metadata": {"partial": true}})),
            ("user_message", json!({"text": "four"})),
            ("assistant_message", json!({"text": "Done."})),
            ("user_message", json!({"text": "five, still running"})),
        ]);
        let audit = super::super::audit(&lines);
        let (parsed, _) = super::super::parse_lines(&lines);
        let found: Vec<(DiagnosticKind, Option<u64>, String)> = diagnostics(&audit, &parsed)
            .into_iter()
            .map(|diagnostic| (diagnostic.kind, diagnostic.seq, diagnostic.message))
            .collect();
        assert_eq!(
            found,
            [
                (
                    DiagnosticKind::PreservedPartialAssistant,
                    Some(1),
                    "turn 1 keeps the partial assistant text \"Useful par\"".to_owned()
                ),
                (DiagnosticKind::DurableTurnFailure, Some(2), "turn 1 ended partial_failed (network)".to_owned()),
                (
                    DiagnosticKind::MissingAssistantEvidence,
                    Some(3),
                    "turn 2 (user_message seq 3) has no assistant message and no turn_failed".to_owned()
                ),
                (
                    DiagnosticKind::PreservedPartialAssistant,
                    Some(5),
                    "turn 3 keeps the partial assistant text \"Half\"".to_owned()
                ),
                (
                    DiagnosticKind::MissingFailureEvidence,
                    Some(4),
                    "turn 3 (user_message seq 4) has a partial assistant message but no turn_failed".to_owned()
                ),
            ]
        );
    }
}
