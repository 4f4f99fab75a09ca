//! WIRE-NO-RETRY-AFTER-TEXT, on the wire: once a response streamed text and did not complete
//! cleanly, the turn makes no further Provider request. Not completing cleanly is the script's
//! failures (in-band error, `failed`, a drop, an EOF, a malformed frame) and, from the mock's
//! journal, a stall the client itself gave up on (it closed the body: its own idle timeout),
//! whatever the script meant. Judged from the script, the requests and the journal alone, so
//! it applies to any implementation, with or without a gauntlet Log.
//!
//! A MAY: no seed forbids a retry; not retrying once text reached the user is the reference's
//! choice (design.md "Contract decisions"). And only a retry counts: a request that asks again
//! with the faulted request's conversation. One whose conversation differs (it resumes from
//! the delivered text, asks to "continue", or rewrites the turn) is a continuation, which
//! shows the user nothing twice (issue 31).

use gauntlet_mock_provider::journal::StreamEnd;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{request_turns, served};

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-NO-RETRY-AFTER-TEXT", also: &[], name: "no_retry_after_text", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let requests = &evidence.capture.requests;
    let turns = request_turns(evidence);
    let mut problems = Vec::new();
    for (idx, pair) in requests.windows(2).enumerate() {
        let (Some(turn), Some(next_turn)) = (turns[idx], turns[idx + 1]) else { continue };
        let Some(response) = served(evidence, &pair[0]) else { continue };
        // A failing response the agent asked for whole came as an HTTP error: no text at all.
        if pair[0].status.is_some_and(|status| status >= 400) {
            continue;
        }
        let closed_by_client = evidence
            .capture
            .timings
            .get(idx)
            .and_then(|timing| timing.ended)
            .is_some_and(|ended| ended.how == StreamEnd::ClientClosed);
        let (text, how) = if response.fails() {
            (response.visible_text(), "failed")
        } else if !response.pause.is_empty() && closed_by_client {
            (response.text_before_pause(), "was closed by the client during a stall (its own idle timeout)")
        } else {
            continue;
        };
        let conversation = |at: usize| evidence.conversations.get(at).map(|conversation| conversation.messages);
        let retried = conversation(idx) == conversation(idx + 1);
        if turn == next_turn && !text.is_empty() && retried {
            problems.push(Violation::in_turn(
                turn + 1,
                format!(
                    "turn {}: request {} was sent after request {} streamed {text:?} and {how}: a retry after text",
                    turn + 1,
                    idx + 2,
                    idx + 1
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{body, check_played, requests, scenario, user};

    const PARTIAL: &str = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"partial_failed\"\nrespond = [{ text = [\"Useful \", \"partial\"], then = \"eof\" }, { text = [\"Useful partial answer\"] }]\n";

    #[test]
    fn a_retry_after_streamed_text_is_caught() {
        let capture = Capture {
            requests: requests(vec![body(vec![user("Summarise")]), body(vec![user("Summarise")])]),
            ..Capture::default()
        };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(PARTIAL)),
            ["turn 1: request 2 was sent after request 1 streamed \"Useful partial\" and failed: a retry after text"]
        );
    }

    /// An agent that falls back to a non-streaming request met an HTTP error there, no text.
    #[test]
    fn a_retry_after_an_http_error_the_wire_showed_passes() {
        let mut capture = Capture {
            requests: requests(vec![body(vec![user("Summarise")]), body(vec![user("Summarise")])]),
            ..Capture::default()
        };
        capture.requests[0].status = Some(500);
        assert!(check_played(INVARIANT, &capture, &scenario(PARTIAL)).is_empty());
    }

    #[test]
    fn a_retry_before_any_text_and_a_new_turn_pass() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ status = 500 }, { text = [\"x\"], then = \"eof\" }]\n[[turn]]\nprompt = \"b\"\nrespond = [{ text = [\"y\"] }]\n";
        let bodies = vec![body(vec![user("a")]), body(vec![user("a")]), body(vec![user("a"), user("b")])];
        let capture = Capture { requests: requests(bodies), ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
    }

    #[test]
    fn a_retry_after_the_client_gave_up_on_a_stall_is_caught() {
        use gauntlet_mock_provider::journal::{Ended, Timing};
        use std::time::Duration;
        let text = "title = \"t\"\n[[turn]]\nprompt = \"Think\"\nexpect = \"timed_out\"\nrespond = [{ text = [\"Let me\", \" think\"], pause = { after = 5, ms = 600000 } }]\n";
        let ended = |how| Timing { received: Duration::ZERO, ended: Some(Ended { at: Duration::from_secs(1), how }) };
        let mut capture = Capture {
            requests: requests(vec![body(vec![user("Think")]), body(vec![user("Think")])]),
            timings: vec![ended(StreamEnd::ClientClosed), ended(StreamEnd::Finished)],
            ..Capture::default()
        };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            [
                "turn 1: request 2 was sent after request 1 streamed \"Let me\" and was closed by the client during a stall (its own idle timeout): a retry after text"
            ]
        );
        capture.timings[0] = ended(StreamEnd::Finished);
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty(), "a stall the client sat through");
    }

    /// A continuation resumes from the delivered text: its conversation differs from the
    /// faulted request's, so it is no retry (issue 31).
    #[test]
    fn a_continuation_is_no_retry() {
        use crate::judge::fixture::assistant;
        let resumed = body(vec![user("Summarise"), assistant("Useful "), user("Resume directly where you stopped.")]);
        let capture =
            Capture { requests: requests(vec![body(vec![user("Summarise")]), resumed]), ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &scenario(PARTIAL)).is_empty());
    }
}
