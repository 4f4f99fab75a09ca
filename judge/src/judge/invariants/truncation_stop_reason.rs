//! ACP-TRUNCATION-STOP-REASON: a clean answer the Provider cut short is answered with the stop
//! reason ACP has for it, `max_tokens` for an output limit and `refusal` for a content filter,
//! rather than `end_turn`, which hides that the answer is incomplete, or an error, which hides
//! that it is an answer (claude-agent-acp answers a content filter's stop so). ACP-STOP-REASON already
//! holds that the turn is answered as a completion at all. An agent that went on after the cut
//! (a continuation request the script could not place, answered with an empty clean response)
//! saw its turn end cleanly, so `end_turn` is its truth there.
//!
//! A content filter's cut asks less: ACP's `refusal` also says the prompt and what follows
//! "won't be included in the next prompt", which an agent that keeps the turn in its
//! conversation would make a lie, so an error is as honest there; only `end_turn` hides the cut
//! (issue 31).

use crate::judge::transcript::{describe, truncation_stop_reason};
use gauntlet_mock_provider::After;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::request_turns;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-TRUNCATION-STOP-REASON",
    also: &[],
    name: "truncation_stop_reason",
    applies: Scope::Run,
    check,
};

fn check(evidence: &Evidence) -> Vec<Violation> {
    let reported = &evidence.capture.reported;
    let driven = evidence.driven_turns(reported.len());
    let first_driven = evidence.first_driven_turn();
    let turns = request_turns(evidence);
    let continued = |turn: usize| {
        evidence
            .capture
            .requests
            .iter()
            .zip(&turns)
            .any(|(request, of)| *of == Some(turn) && matches!(request.unplaced, Some(After::Truncated(_))))
    };
    reported
        .iter()
        .zip(&driven)
        .enumerate()
        .filter_map(|(idx, (answer, turn))| {
            // The model's explicit refusal is ACP-REFUSAL-STOP-REASON's, one behaviour judged
            // by the rule that names it.
            let refused = evidence
                .scenario
                .and_then(|scenario| scenario.turns.get(idx))
                .and_then(|turn| turn.respond.last())
                .is_some_and(gauntlet_mock_provider::Response::refuses);
            let reason = turn.truncation.as_deref().filter(|_| !continued(idx) && !refused)?;
            let expected = truncation_stop_reason(reason);
            let filtered = expected == "refusal";
            let hidden = answer.stop_reason.as_deref() == Some("end_turn") || (answer.error.is_some() && !filtered);
            let expected = if filtered { "`refusal`, or an error if the turn stays in the conversation" } else { "`max_tokens`" };
            hidden.then(|| {
                Violation::in_turn(first_driven + idx + 1, format!(
                    "turn {}: the Provider cut the answer short (`{reason}`, {}) and it was answered {}, not {expected}",
                    first_driven + idx + 1,
                    turn.source,
                    describe(answer.stop_reason.as_deref(), answer.error.as_ref())
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{check, truncated_answer};

    #[test]
    fn a_truncated_answer_answered_end_turn_is_caught_and_max_tokens_passes() {
        let mut capture = truncated_answer("max_output_tokens");
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn 1: the Provider cut the answer short (`max_output_tokens`, the Log shows) and it was answered with stop reason `end_turn`, not `max_tokens`"
            ]
        );
        capture.reported[0].stop_reason = Some("max_tokens".into());
        assert!(check(INVARIANT, &capture).is_empty());
    }

    /// An error for a content filter's stop claims no success, and `refusal` would also claim
    /// the turn leaves the conversation, which an agent that keeps it cannot say: both pass;
    /// `end_turn` hides the cut (issue 31).
    #[test]
    fn a_content_filter_answered_with_an_error_passes_and_end_turn_does_not() {
        let mut capture = truncated_answer("content_filter");
        capture.reported.push(Reported { stop_reason: None, error: Some(serde_json::json!({"code": -32603})) });
        assert!(check(INVARIANT, &capture).is_empty());
        let stop = super::super::stop_reason_matches_log::INVARIANT;
        assert!(check(stop, &capture).is_empty());
        capture.reported[0] = Reported { stop_reason: Some("end_turn".into()), error: None };
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn 1: the Provider cut the answer short (`content_filter`, the Log shows) and it was answered with stop reason `end_turn`, not `refusal`, or an error if the turn stays in the conversation"
            ]
        );
    }

    /// An agent that asked to continue after the cut got an empty clean answer: its turn ended
    /// cleanly, and `end_turn` says so.
    #[test]
    fn end_turn_after_a_continuation_passes() {
        use crate::capture::Request;
        use crate::judge::fixture::{body, check_played, scenario, user};
        let played = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"q\"\nrespond = [{ text = [\"a\"], then = { incomplete = \"max_output_tokens\" } }]\n",
        );
        let mut capture = truncated_answer("max_output_tokens");
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        capture.requests = Request::chained([("root".to_owned(), Some(0), body(vec![user("q")]))]);
        assert_eq!(check_played(INVARIANT, &capture, &played).len(), 1);
        capture.requests = Request::chained([
            ("root".to_owned(), Some(0), body(vec![user("q")])),
            ("root".to_owned(), None, body(vec![user("q")])),
        ]);
        capture.requests[1].unplaced = Some(After::Truncated("max_output_tokens".into()));
        assert!(check_played(INVARIANT, &capture, &played).is_empty());
    }
}
