//! ACP-STOP-REASON: the agent's answer to `session/prompt` agrees with the terminal state the
//! Log shows. `end_turn` only for `completed`, `max_tokens` / `refusal` only for a truncated
//! completion, `cancelled` only for `interrupted`, and a failed, partially failed or timed-out
//! turn is a JSON-RPC error (whose `data.terminalStatus`, when given, names it; ACP-ERROR-DATA
//! asks for it). A truncated completion answered `end_turn` is still a completion, and one
//! answered with an error claims no success: that it should say `max_tokens` or `refusal` is
//! ACP-TRUNCATION-STOP-REASON's (a SHOULD), not this rule's. That a content filter's or an output
//! limit's stop is a completion at all is pixir.md 1.2's reading, which only that SHOULD applies.

use gauntlet_agent::TerminalStatus;

use crate::judge::evidence::{Evidence, LastAnswer};
use crate::judge::transcript::{describe, truncation_stop_reason};
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-STOP-REASON", also: &[], name: "stop_reason_matches_log", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut problems = Vec::new();
    let reported = &evidence.capture.reported;
    let driven = evidence.driven_turns(reported.len());
    let first_driven = evidence.first_driven_turn();
    for (idx, answer) in reported.iter().enumerate() {
        let n = first_driven + idx + 1;
        let Some(turn) = driven.get(idx) else {
            problems.push(Violation::in_turn(n, format!("turn {n} was answered but the Log has no such turn")));
            continue;
        };
        if turn.answer == LastAnswer::Invented {
            continue;
        }
        let said = describe(answer.stop_reason.as_deref(), answer.error.as_ref());
        let problem = match (answer.claimed_status(), turn.status) {
            // An error that names no state still says the turn did not complete: honest for a
            // failure (error_data_complete asks for the state), a lie for anything else.
            (None, Some(status)) if answer.error.is_some() && status.is_failure() => None,
            // A clean answer the Provider cut short, answered with an error: it claims less than
            // happened, no success; which stop reason it should have had is
            // ACP-TRUNCATION-STOP-REASON's (a SHOULD).
            (None, Some(TerminalStatus::Completed)) if answer.error.is_some() && turn.truncation.is_some() => None,
            // An empty answer (no text, no call) answered with an error: the agent says it got
            // nothing usable, which is true.
            (None, Some(TerminalStatus::Completed)) if answer.error.is_some() && turn.answer == LastAnswer::Empty => {
                None
            }
            (None, status) => Some(format!(
                "turn {n}: the answer {said} names no terminal state, and {} `{}`",
                turn.source,
                status.map_or("no terminal state", |status| status.as_str())
            )),
            (Some(claimed), Some(status)) if claimed == status => {
                let allowed: &[&str] = match (status, turn.truncation.as_deref()) {
                    (TerminalStatus::Completed, None) => &["end_turn"],
                    (TerminalStatus::Completed, Some(reason)) => &["end_turn", truncation_stop_reason(reason)],
                    (TerminalStatus::Interrupted, _) => &["cancelled"],
                    _ => &[],
                };
                // A failure has no stop reason: its answer is an error.
                let honest = match answer.stop_reason.as_deref() {
                    Some(said) => allowed.contains(&said),
                    None => allowed.is_empty(),
                };
                (!honest).then(|| format!("turn {n} is `{status}` ({}) but was answered {said}", turn.source))
            }
            (Some(claimed), status) => Some(format!(
                "turn {n} was answered {said} (`{claimed}`) but {} `{}`",
                turn.source,
                status.map_or("no terminal state", |status| status.as_str())
            )),
        };
        problems.extend(problem.map(|message| Violation::in_turn(n, message)));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{capture, check, truncated_answer};
    use serde_json::json;

    fn partial_failed_log() -> crate::capture::Capture {
        capture(
            &[
                ("user_message", json!({"text": "Summarise"})),
                (
                    "assistant_message",
                    json!({"text": "Useful", "metadata": {"partial": true, "terminal_status": "partial_failed"}}),
                ),
                ("turn_failed", json!({"terminal_status": "partial_failed", "error_kind": "network"})),
            ],
            &[],
        )
    }

    #[test]
    fn a_partially_failed_turn_answered_end_turn_is_caught() {
        let mut capture = partial_failed_log();
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert_eq!(
            check(INVARIANT, &capture),
            ["turn 1 was answered with stop reason `end_turn` (`completed`) but the Log shows `partial_failed`"]
        );
    }

    /// In v2 the turn's answer is the idle state that ended it, not the prompt's answer (an
    /// acknowledgement, which the driver reports as no stop reason): read through the v1
    /// reading, the same lie is the same finding.
    #[test]
    fn a_v2_turn_idle_end_turn_whose_log_says_failed_is_caught() {
        use agent_client_protocol_schema::v2;

        use crate::judge::v1_reading::v2_fixture::one_turn;
        let mut capture = partial_failed_log();
        capture.acp = one_turn("Summarise", &["Useful"], v2::StopReason::EndTurn);
        capture.reported.push(Reported { stop_reason: None, error: None });
        assert_eq!(
            check(INVARIANT, &capture),
            ["turn 1 was answered with stop reason `end_turn` (`completed`) but the Log shows `partial_failed`"]
        );
    }

    /// A model that answers nothing (no text, no call, a clean end): an agent may say so with
    /// an error, which claims no success; one that had text to show and answered an error
    /// names no state the turn was in.
    #[test]
    fn an_empty_answer_may_be_answered_with_an_error() {
        use crate::judge::fixture::{check_played, scenario};
        let answered_error = crate::capture::Capture {
            reported: vec![Reported {
                stop_reason: None,
                error: Some(json!({"code": -32603, "message": "empty response"})),
            }],
            ..crate::capture::Capture::default()
        };
        let turn =
            |respond: &str| scenario(&format!("title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{respond}]\n"));
        assert!(check_played(INVARIANT, &answered_error, &turn("{}")).is_empty());
        assert!(check_played(INVARIANT, &answered_error, &turn("{ reasoning = [{ summary = [\"hm\"] }] }")).is_empty());
        assert_eq!(check_played(INVARIANT, &answered_error, &turn("{ text = [\"Hi.\"] }")).len(), 1);
    }

    #[test]
    fn the_honest_error_passes() {
        let mut capture = partial_failed_log();
        let error = json!({"code": -32603, "message": "m", "data": {"terminalStatus": "partial_failed"}});
        capture.reported.push(Reported { stop_reason: None, error: Some(error) });
        assert!(check(INVARIANT, &capture).is_empty());
    }

    #[test]
    fn a_truncated_answer_may_say_end_turn_but_not_refusal_for_max_tokens() {
        let mut capture = truncated_answer("max_output_tokens");
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert!(check(INVARIANT, &capture).is_empty());
        capture.reported[0].stop_reason = Some("refusal".into());
        assert_eq!(
            check(INVARIANT, &capture),
            ["turn 1 is `completed` (the Log shows) but was answered with stop reason `refusal`"]
        );
    }

    /// An agent not told the scenario's idle timeout is judged from the wire: the stall that
    /// resumed and was read to its end is a completed response, and `end_turn` its truth; a
    /// stream it gave up on is not.
    #[test]
    fn a_turn_resting_on_an_untold_knob_is_judged_from_the_wire() {
        use std::time::Duration;

        use gauntlet_mock_provider::{Ended, StreamEnd, Timing};

        use crate::capture::{Capture, Request};
        use crate::judge::fixture::{body, check_played, scenario, user};
        use crate::scenario::Knobs;

        let mut stall = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"q\"\nexpect = \"timed_out\"\nerror_kind = \"stream_idle_timeout\"\n\
             respond = [{ text = [\"a\"], pause = { after = 5, ms = 600000 } }]\n",
        );
        stall.knobs = Some(Knobs::default());
        let played = |how: StreamEnd| {
            let mut requests = Request::chained([("root".to_owned(), Some(0), body(vec![user("q")]))]);
            requests[0].turn = Some(0);
            let ended = Some(Ended { at: Duration::from_secs(600), how });
            Capture {
                requests,
                timings: vec![Timing { received: Duration::ZERO, ended }],
                reported: vec![Reported { stop_reason: Some("end_turn".into()), error: None }],
                ..Capture::default()
            }
        };
        assert!(check_played(INVARIANT, &played(StreamEnd::Finished), &stall).is_empty());
        let gave_up = check_played(INVARIANT, &played(StreamEnd::ClientClosed), &stall);
        assert_eq!(
            gave_up,
            [
                "turn 1 was answered with stop reason `end_turn` (`completed`) but the wire shows (the agent is not told the scenario's `stream_idle_timeout_ms`) `timed_out`"
            ]
        );
        // Told the knob, the script's outcome holds.
        stall.knobs = Some(Knobs { idle_timeout: true, ..Knobs::default() });
        assert_eq!(check_played(INVARIANT, &played(StreamEnd::Finished), &stall).len(), 1);
    }
}
