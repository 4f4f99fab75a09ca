//! Crash recovery: a Log whose last Turn has no terminal evidence was left by a process that
//! died mid-turn. On resume the Turn gets its evidence before anything else
//! (TURN-RESTART-RECOVERY): orphan tool calls repaired with reason `restart`, then
//! `turn_failed` with `terminal_status: "interrupted"` and `error_kind: "restarted"`
//! (seed 000, ADR 0026 "Turn terminal states": `interrupted` needs "terminal status/failure
//! evidence plus orphan tool-call repair if needed").

use serde_json::{Value, json};

use crate::event::{ErrorKind, Event, EventType, Payload, TerminalStatus};
use crate::log::LogError;
use crate::session::Session;

/// The `reason` of the orphan repair and of `turn_failed.details` for a Turn closed on resume.
pub const RESTART_REASON: &str = "restart";

/// The seq of the last Turn's `user_message` when that Turn has no terminal evidence: no
/// `turn_failed`, no partial `assistant_message` carrying its terminal status, and no clean
/// `assistant_message` after its last `tool_call`. The same reading as the harness's auditor,
/// on runtime types.
pub fn dangling_turn(history: &[Event]) -> Option<u64> {
    let start = history.iter().rposition(|event| event.kind() == EventType::UserMessage)?;
    let turn = &history[start + 1..];
    let terminal_metadata = |event: &Event| {
        event.kind() == EventType::AssistantMessage
            && event.data().get("metadata").and_then(|m| m.get("terminal_status")).is_some_and(Value::is_string)
    };
    if turn.iter().any(|event| event.kind() == EventType::TurnFailed || terminal_metadata(event)) {
        return None;
    }
    let partial = |event: &Event| {
        event.data().get("metadata").and_then(|m| m.get("partial")).and_then(Value::as_bool) == Some(true)
    };
    let last_answer = turn.iter().rposition(|event| event.kind() == EventType::AssistantMessage && !partial(event));
    let last_call = turn.iter().rposition(|event| event.kind() == EventType::ToolCall);
    match last_answer {
        Some(answer) if last_call.is_none_or(|call| call < answer) => None,
        _ => history[start].seq(),
    }
}

/// Closes the last Turn if a crash left it without terminal evidence; `true` when it did.
/// The ACP agent calls it right after it opens a Session, before anything else is recorded.
pub fn close_dangling_turn(session: &mut Session) -> Result<bool, LogError> {
    let Some(user_seq) = dangling_turn(session.history()) else { return Ok(false) };
    let last_seq = session.history().last().and_then(Event::seq).unwrap_or(user_seq);
    let elapsed_ms = elapsed_since_user_message(session, user_seq);
    session.repair_orphans(RESTART_REASON)?;
    let details = json!({
        "elapsed_ms": elapsed_ms,
        "reason": RESTART_REASON,
        "user_seq": user_seq,
        "last_seq_before_restart": last_seq,
        "next_actions": ["retry_turn"],
    });
    let Value::Object(details) = details else { return Ok(false) };
    session.record(Payload::turn_failed(
        TerminalStatus::Interrupted,
        ErrorKind::Restarted,
        "the runtime stopped during this turn; the resumed Session closed it",
        details,
    ))?;
    Ok(true)
}

/// How long ago, on the Session's clock, the open Turn's `user_message` was stamped: the
/// Turn's `elapsed_ms`, downtime included; 0 when its `ts` does not parse or lies ahead.
fn elapsed_since_user_message(session: &Session, user_seq: u64) -> u64 {
    let stamped = session
        .history()
        .iter()
        .find(|event| event.seq() == Some(user_seq))
        .and_then(|event| humantime::parse_rfc3339(event.ts()).ok());
    let elapsed = stamped.and_then(|at| session.clock.now().duration_since(at).ok()).unwrap_or_default();
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(kinds: &[(&str, Value)]) -> Vec<Event> {
        kinds
            .iter()
            .enumerate()
            .map(|(seq, (kind, data))| {
                let line = json!({"data": data, "id": format!("{seq:016x}"), "seq": seq, "session_id": "s", "ts": "t", "type": kind});
                serde_json::from_value(line).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_turn_without_terminal_evidence_is_dangling_and_others_are_not() {
        let user = ("user_message", json!({"text": "q"}));
        let answer = ("assistant_message", json!({"text": "a"}));
        let call = ("tool_call", json!({"call_id": "c", "name": "read", "args": {}}));
        let result = ("tool_result", json!({"call_id": "c", "ok": true, "output": "x"}));
        let failed = ("turn_failed", json!({"terminal_status": "failed", "error_kind": "network"}));
        let partial = ("assistant_message", json!({"text": "p", "metadata": {"partial": true}}));
        let cases = [
            (vec![], None),
            (vec![user.clone()], Some(0)),
            (vec![user.clone(), answer.clone()], None),
            (vec![user.clone(), answer.clone(), user.clone()], Some(2)),
            (vec![user.clone(), call.clone(), result.clone()], Some(0)),
            (vec![user.clone(), answer.clone(), call.clone(), result.clone()], Some(0)),
            (vec![user.clone(), call, result, answer], None),
            (vec![user.clone(), partial.clone()], Some(0)),
        ];
        for (events, expected) in cases {
            let kinds: Vec<&str> = events.iter().map(|(kind, _)| *kind).collect();
            assert_eq!(dangling_turn(&history(&events)), expected, "{kinds:?}");
        }
        assert_eq!(dangling_turn(&history(&[user.clone(), partial, failed])), None);
    }
}
