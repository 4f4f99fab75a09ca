//! REPLAY-NO-PARTIAL: the text of a partial `assistant_message` never reaches the Provider as
//! assistant content in any request (read in any dialect as a [`Conversation`](gauntlet_mock_provider::Conversation)). Partial texts come from the Log, or, for an
//! implementation without one, from the script: what a failed response streamed.

use std::collections::HashSet;

use gauntlet_mock_provider::Message;

use super::{Invariant, Scope, judge_messages, served};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-NO-PARTIAL", also: &[], name: "no_partial_text_replayed", scope: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let (clean, partials) = partial_texts(evidence);
    judge_messages(evidence, |_, message, found| {
        let Message::Assistant { text } = message else { return };
        for (origin, partial) in &partials {
            if text != partial && clean.contains(text) {
                continue;
            }
            if text.contains(partial.as_str()) {
                found.push(format!("replays the partial assistant text of {origin} as assistant content: {partial:?}"));
            }
        }
    })
}

/// The clean answers, and each partial text once with its first origin (from the Log, or from
/// the script for an implementation without one); a partial text that is also a clean answer
/// is not one.
pub(super) fn partial_texts(evidence: &Evidence) -> (HashSet<String>, Vec<(String, String)>) {
    let (clean, partials) = if evidence.capture.log.is_empty() { from_script(evidence) } else { from_log(evidence) };
    // A set: a long Session has many clean answers, and every carried text is looked up.
    let clean: HashSet<String> = clean.into_iter().collect();
    // Each partial text once, named by its first origin: a failing provider retried streams the
    // same text again, and one carried copy is one finding, not one per failed attempt.
    let mut seen = HashSet::new();
    let partials = partials
        .into_iter()
        .filter(|(_, text)| !text.is_empty() && !clean.contains(text) && seen.insert(text.clone()))
        .collect();
    (clean, partials)
}

/// Clean answers and partial texts (with where they come from) as the Log records them.
fn from_log(evidence: &Evidence) -> (Vec<String>, Vec<(String, String)>) {
    let clean = evidence
        .lines
        .iter()
        .filter(|line| line.kind == "assistant_message" && !line.is_partial_assistant())
        .filter_map(|line| line.str_field("text").map(str::to_owned))
        .collect();
    let partials = evidence
        .lines
        .iter()
        .filter(|line| line.is_partial_assistant())
        .filter_map(|line| Some((format!("seq {}", line.seq?), line.str_field("text")?.to_owned())))
        .collect();
    (clean, partials)
}

/// For an implementation without a Log: the text each served response streamed, clean when
/// the response completed, partial when it failed.
fn from_script(evidence: &Evidence) -> (Vec<String>, Vec<(String, String)>) {
    let (mut clean, mut partials) = (Vec::new(), Vec::new());
    for (idx, request) in evidence.capture.requests.iter().enumerate() {
        if let Some(response) = served(evidence, request) {
            if response.fails() {
                partials.push((format!("the failed response to request {}", idx + 1), response.visible_text()));
            } else {
                clean.push(response.visible_text());
            }
        }
    }
    (clean, partials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{assistant, body, capture, check, user};
    use serde_json::json;

    fn partial_then_retry(second_request: Vec<serde_json::Value>) -> Vec<String> {
        let log = [
            ("user_message", json!({"text": "Summarise"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ("user_message", json!({"text": "Try again"})),
        ];
        check(INVARIANT, &capture(&log, &[body(vec![user("Summarise")]), body(second_request)]))
    }

    #[test]
    fn a_fold_that_replays_partial_text_is_caught() {
        // What a broken replay fold sends: the partial answer as if it were final.
        let broken = vec![user("Summarise"), assistant("Useful partial"), user("Try again")];
        assert_eq!(
            partial_then_retry(broken),
            ["request 2 replays the partial assistant text of seq 1 as assistant content: \"Useful partial\""]
        );
    }

    /// An agent that re-sends the partial with each retry: one finding, at the first request
    /// that carried it, naming the later ones and the most copies one held.
    #[test]
    fn a_partial_piled_up_by_retries_is_one_finding() {
        let log = [
            ("user_message", json!({"text": "Summarise"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
        ];
        let piled = |copies: usize| {
            let mut messages = vec![user("Summarise")];
            messages.extend(std::iter::repeat_n(assistant("Useful partial"), copies));
            body(messages)
        };
        let bodies = [body(vec![user("Summarise")]), piled(1), piled(2), piled(3)];
        assert_eq!(
            check(INVARIANT, &capture(&log, &bodies)),
            [
                "request 2 replays the partial assistant text of seq 1 as assistant content: \"Useful partial\" (carried again by requests 3 and 4, up to 3 copies in one request)"
            ]
        );
    }

    #[test]
    fn the_correct_fold_passes() {
        assert!(partial_then_retry(vec![user("Summarise"), user("Try again")]).is_empty());
    }

    #[test]
    fn without_a_log_the_script_says_what_was_partial() {
        use crate::capture::Capture;
        use crate::judge::invariants::fixture::{check_played, requests, scenario};
        let text = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"partial_failed\"\nrespond = [{ text = [\"Useful partial\"], then = \"disconnect\" }]\n[[turn]]\nprompt = \"Try again\"\nrespond = [{ text = [\"Done.\"] }]\n";
        let replayed = vec![user("Summarise"), assistant("Useful partial"), user("Try again")];
        let capture =
            Capture { requests: requests(vec![body(vec![user("Summarise")]), body(replayed)]), ..Capture::default() };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            [
                "request 2 replays the partial assistant text of the failed response to request 1 as assistant content: \"Useful partial\""
            ]
        );
    }
}
