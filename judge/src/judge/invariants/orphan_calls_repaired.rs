//! TURN-ORPHAN-REPAIR: every `tool_call` in a Log gets its `tool_result` before the Turn goes
//! on without it: before the next Provider call (`provider_usage`) and before the next Turn
//! (`user_message`) (seed 000: "tool calls are paired or repaired"). Before the Turn's
//! `turn_failed` is TURN-FAILURE-DETAILS' (a SHOULD: design.md's order). The words of a result
//! the runtime made up, `error.kind: "orphan_tool_call"` with the call id and the reason
//! (`interrupt`, `before_start_turn`, ...), are the reference's (TURN-REF-EVIDENCE, a MAY).
//!
//! A call in a Turn this run did not drive to its end (a preloaded Log cut short by a crash, a
//! detached child) may still be open at the end of the Log: the next Turn repairs it.

use gauntlet_agent::EventType;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::log_line::Line;

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-ORPHAN-REPAIR",
    also: &[DETAILS, REFERENCE],
    name: "orphan_calls_repaired",
    applies: Scope::Log,
    check,
};

/// What a call still open at its Turn's `turn_failed` breaks.
const DETAILS: &str = "TURN-FAILURE-DETAILS";

/// What a made-up result that does not name its call and reason breaks.
const REFERENCE: &str = "TURN-REF-EVIDENCE";

/// Events that must not come between a call and its result.
const MOVES_ON: [EventType; 3] = [EventType::ProviderUsage, EventType::TurnFailed, EventType::UserMessage];

fn check(evidence: &Evidence) -> Vec<Violation> {
    let lines = &evidence.lines;
    let first_driven = evidence.first_driven_turn();
    let mut problems = Vec::new();
    for (at, call) in lines.iter().enumerate().filter(|(_, line)| line.kind == EventType::ToolCall) {
        let call_id = call.call_id().unwrap_or_default();
        let seq = seq_of(call);
        let later = &lines[at + 1..];
        let result =
            later.iter().position(|line| line.tool_result().is_some_and(|result| result.call_id == Some(call_id)));
        let before_result = &later[..result.unwrap_or(later.len())];
        // Going on to the next call or Turn unrepaired, or never repaired, breaks the MUST; a
        // repair that only comes after the Turn's `turn_failed`, the SHOULD.
        let moves_on = |line: &&Line| line.kind.known().is_some_and(|kind| MOVES_ON.contains(&kind));
        let goes_on = before_result.iter().filter(moves_on).find(|line| line.kind != EventType::TurnFailed);
        match goes_on.or_else(|| before_result.iter().find(moves_on)) {
            Some(moved_on) => {
                let message = format!(
                    "tool_call `{call_id}` (seq {seq}) has no tool_result before {} at seq {}",
                    moved_on.kind,
                    seq_of(moved_on)
                );
                let violation = Violation::new(message);
                let late_repair = moved_on.kind == EventType::TurnFailed && result.is_some();
                problems.push(if late_repair { violation.of(DETAILS) } else { violation });
            }
            None if result.is_none() && turn_of(evidence, call) >= Some(first_driven) => {
                problems.push(Violation::new(format!("tool_call `{call_id}` (seq {seq}) never gets a tool_result")));
            }
            None => {}
        }
        if let Some(result) = result.map(|offset| &later[offset])
            && result.tool_result().and_then(|result| result.error_kind()) == Some("orphan_tool_call")
        {
            let unnamed = orphan_evidence(result, call_id);
            problems.extend(unnamed.into_iter().map(|message| Violation::new(message).of(REFERENCE)));
        }
    }
    problems
}

/// What an orphan repair must say: which call, and why.
fn orphan_evidence(result: &Line, call_id: &str) -> Vec<String> {
    let details = result.tool_result().and_then(|result| result.error_details());
    let field = |key: &str| details.and_then(|details| details.get(key)).and_then(Value::as_str).unwrap_or_default();
    let mut problems = Vec::new();
    if field("reason").is_empty() {
        problems.push(format!("the orphan repair of `{call_id}` (seq {}) gives no `reason`", seq_of(result)));
    }
    if field("call_id") != call_id {
        problems.push(format!(
            "the orphan repair of `{call_id}` (seq {}) names call `{}` in its details",
            seq_of(result),
            field("call_id")
        ));
    }
    problems
}

/// The index of the Turn a line belongs to, by the `user_message`s before it.
fn turn_of(evidence: &Evidence, line: &Line) -> Option<usize> {
    let seq = line.seq?;
    evidence.audit.turns.iter().rposition(|turn| turn.user_seq < seq)
}

fn seq_of(line: &Line) -> String {
    line.seq.map_or_else(|| "?".to_owned(), |seq| seq.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{capture, check};

    fn orphan(call_id: &str, reason: &str) -> Value {
        json!({"call_id": call_id, "ok": false, "error": {"kind": "orphan_tool_call", "message": "m",
            "details": {"call_id": call_id, "tool": "read", "reason": reason}}})
    }

    fn call(call_id: &str) -> (&'static str, Value) {
        ("tool_call", json!({"call_id": call_id, "name": "read", "args": {}}))
    }

    #[test]
    fn a_call_repaired_at_the_interrupt_passes() {
        let capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                call("c1"),
                ("tool_result", orphan("c1", "interrupt")),
                ("turn_failed", json!({"terminal_status": "interrupted"})),
            ],
            &[],
        );
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new());
    }

    #[test]
    fn an_interrupt_without_repair_is_caught() {
        let capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                call("c1"),
                ("turn_failed", json!({"terminal_status": "interrupted"})),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            ["tool_call `c1` (seq 1) has no tool_result before turn_failed at seq 2"]
        );
    }

    /// A repair written after the Turn's `turn_failed` still pairs the call (the seed's MUST);
    /// only the order is missed (issue 31: the order is design.md's, a SHOULD).
    #[test]
    fn a_repair_after_turn_failed_is_the_shoulds() {
        use crate::judge::fixture::check_as;
        let capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                call("c1"),
                ("turn_failed", json!({"terminal_status": "interrupted"})),
                ("tool_result", orphan("c1", "interrupt")),
            ],
            &[],
        );
        assert_eq!(check_as(INVARIANT, INVARIANT.id, &capture), Vec::<String>::new());
        assert_eq!(
            check_as(INVARIANT, DETAILS, &capture),
            ["tool_call `c1` (seq 1) has no tool_result before turn_failed at seq 2"]
        );
    }

    #[test]
    fn a_repair_after_the_next_turn_started_or_without_reason_is_caught() {
        let capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                call("c1"),
                ("user_message", json!({"text": "again"})),
                ("tool_result", orphan("c1", "")),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "tool_call `c1` (seq 1) has no tool_result before user_message at seq 2",
                "the orphan repair of `c1` (seq 3) gives no `reason`",
            ]
        );
    }

    #[test]
    fn an_open_call_is_caught_only_in_a_driven_turn() {
        let mut capture = capture(&[("user_message", json!({"text": "q"})), call("c1")], &[]);
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new(), "a preloaded turn cut short is repaired later");
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert_eq!(check(INVARIANT, &capture), ["tool_call `c1` (seq 1) never gets a tool_result"]);
    }
}
