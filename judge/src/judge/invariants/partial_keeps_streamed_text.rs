//! TURN-PARTIAL-EVIDENCE, against the wire: the partial `assistant_message` holds what the
//! failed response streamed. For each driven turn that did not complete, the last Provider
//! response of the turn (as the script answered it) tells what text reached the runtime: when
//! that response streamed text and failed without a stall, the Log keeps exactly that text as
//! the partial answer; a partial answer that is there is always a prefix of it (a stall or a
//! cancel may cut the stream earlier). So a runtime that drops or rewrites the partial text is
//! caught, not only one that forgets the `turn_failed` after it.

use gauntlet_agent::TerminalStatus;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{request_turns, served};

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-PARTIAL-EVIDENCE",
    also: &[],
    name: "partial_keeps_streamed_text",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if evidence.capture.log.is_empty() {
        return Vec::new(); // no Log: what the client was shown is WIRE-TEXT-ONCE's
    }
    let turns = request_turns(evidence);
    let requests = &evidence.capture.requests;
    let n_driven = evidence.capture.reported.len();
    let first_turn = scenario.turns.len().saturating_sub(n_driven);
    let mut problems = Vec::new();
    for offset in 0..n_driven {
        let Some(audited) = evidence.audit.turns.get(evidence.first_driven_turn() + offset) else { continue };
        let Some(status) = audited.terminal_status.filter(|status| *status != TerminalStatus::Completed) else {
            continue;
        };
        let turn = first_turn + offset;
        let Some(last) = turns.iter().rposition(|request_turn| *request_turn == Some(turn)) else { continue };
        let Some(response) = served(evidence, &requests[last]).filter(|response| response.fails()) else { continue };
        let streamed = response.visible_text();
        let end =
            evidence.audit.turns.get(evidence.first_driven_turn() + offset + 1).map_or(u64::MAX, |next| next.user_seq);
        let kept = evidence
            .lines
            .iter()
            .filter(|line| line.seq.is_some_and(|seq| seq > audited.user_seq && seq < end))
            .find(|line| line.is_partial_assistant())
            .map(|line| {
                (
                    line.seq.unwrap_or_default(),
                    line.assistant_message().and_then(|message| message.text).unwrap_or_default(),
                )
            });
        let whole_stream_seen = response.pause.is_empty() && status != TerminalStatus::Interrupted;
        match kept {
            Some((seq, text)) if !streamed.starts_with(text) || (whole_stream_seen && text != streamed) => {
                problems.push(format!(
                    "turn {}: the partial assistant_message at seq {seq} keeps {text:?}, but request {} streamed {streamed:?}",
                    turn + 1,
                    last + 1
                ));
            }
            None if whole_stream_seen && !streamed.is_empty() => problems.push(format!(
                "turn {} ended {status} after request {} streamed {streamed:?}, but the Log keeps no partial assistant_message",
                turn + 1,
                last + 1
            )),
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::capture::{Capture, Reported};
    use crate::judge::fixture::{body, capture, check_played, requests, scenario, user};

    const PARTIAL: &str = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"partial_failed\"\nrespond = [{ text = [\"Useful \", \"partial\"], then = { error = \"server_error\" } }]\n";

    fn failed_turn(events: &[(&str, Value)]) -> Capture {
        let mut capture = capture(events, &[]);
        capture.requests = requests(vec![body(vec![user("Summarise")])]);
        capture.reported.push(Reported { stop_reason: None, error: Some(json!({"code": -32603})) });
        capture
    }

    fn partial(text: &str) -> (&'static str, Value) {
        ("assistant_message", json!({"text": text, "metadata": {"partial": true, "terminal_status": "partial_failed"}}))
    }

    fn turn_failed(status: &str) -> (&'static str, Value) {
        ("turn_failed", json!({"terminal_status": status, "error_kind": "provider_http_error"}))
    }

    #[test]
    fn the_streamed_text_kept_whole_passes() {
        let capture = failed_turn(&[
            ("user_message", json!({"text": "Summarise"})),
            partial("Useful partial"),
            turn_failed("partial_failed"),
        ]);
        assert!(check_played(INVARIANT, &capture, &scenario(PARTIAL)).is_empty());
    }

    #[test]
    fn a_dropped_or_rewritten_partial_is_caught() {
        let dropped = failed_turn(&[("user_message", json!({"text": "Summarise"})), turn_failed("failed")]);
        assert_eq!(
            check_played(INVARIANT, &dropped, &scenario(PARTIAL)),
            [
                "turn 1 ended failed after request 1 streamed \"Useful partial\", but the Log keeps no partial assistant_message"
            ]
        );
        let cut = failed_turn(&[
            ("user_message", json!({"text": "Summarise"})),
            partial("Useful "),
            turn_failed("partial_failed"),
        ]);
        assert_eq!(
            check_played(INVARIANT, &cut, &scenario(PARTIAL)),
            [
                "turn 1: the partial assistant_message at seq 1 keeps \"Useful \", but request 1 streamed \"Useful partial\""
            ]
        );
    }
}
