//! WIRE-NO-RETRY-AFTER-TEXT, on the wire: once a response streamed text and then failed, the
//! turn makes no further Provider request. Judged from the script and the requests alone, so
//! it applies to any implementation, with or without a gauntlet Log.

use super::{Invariant, Scope, request_turns, served};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-NO-RETRY-AFTER-TEXT", also: &[], name: "no_retry_after_text", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let requests = &evidence.capture.requests;
    let turns = request_turns(evidence);
    let mut problems = Vec::new();
    for (idx, pair) in requests.windows(2).enumerate() {
        let (Some(turn), Some(next_turn)) = (turns[idx], turns[idx + 1]) else { continue };
        let Some(response) = served(evidence, &pair[0]).filter(|response| response.fails()) else { continue };
        let text = response.visible_text();
        if turn == next_turn && !text.is_empty() {
            problems.push(format!(
                "turn {}: request {} was sent after request {} streamed {text:?} and failed: a retry after text",
                turn + 1,
                idx + 2,
                idx + 1
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{body, check_played, requests, scenario, user};

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

    #[test]
    fn a_retry_before_any_text_and_a_new_turn_pass() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ status = 500 }, { text = [\"x\"], then = \"eof\" }]\n[[turn]]\nprompt = \"b\"\nrespond = [{ text = [\"y\"] }]\n";
        let bodies = vec![body(vec![user("a")]), body(vec![user("a")]), body(vec![user("a"), user("b")])];
        let capture = Capture { requests: requests(bodies), ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
    }
}
