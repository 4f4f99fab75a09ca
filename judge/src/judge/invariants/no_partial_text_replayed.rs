//! REPLAY-NO-PARTIAL: the text of a partial `assistant_message` never reaches the Provider as
//! assistant content in any request (read in any dialect as a [`Conversation`](gauntlet_mock_provider::Conversation)). Partial texts come from the Log, or, for an
//! implementation without one, from the script: what a failed response streamed, and what a
//! response streamed before a stall the client closed it in (a turn cancelled or abandoned
//! mid-stream: seed 000, `interrupted`, "Do not replay as assistant content").

use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::partials::partial_texts;
use crate::judge::views::requests::judge_messages;
use crate::verdict::At;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-NO-PARTIAL", also: &[], name: "no_partial_text_replayed", applies: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let (clean, partials) = partial_texts(evidence);
    // A message holds a partial when it contains its text and is no clean answer of the model's
    // itself: a later answer may begin with the same words (a retry's whole answer).
    let holds = |text: &String, partial: &str| text.contains(partial) && (text == partial || !clean.contains(text));
    // Partials a request of their own turn carried to resume from (index into `partials`, and
    // the request): the turn was still running, so that is no replay; a later turn's request
    // that still carries one is.
    let mut resumed: Vec<(usize, usize)> = Vec::new();
    let requests = &evidence.capture.requests;
    let mut violations = judge_messages(evidence, |index, request, message, found| {
        let Message::Assistant { text } = message else { return };
        for (at, partial) in partials.iter().enumerate() {
            if !holds(text, &partial.text) {
                continue;
            }
            if partial.turn.is_some() && request.turn.map(|turn| turn + 1) == partial.turn {
                resumed.push((at, index));
                continue;
            }
            let message = format!(
                "replays the partial assistant text of {} as assistant content: {:?}",
                partial.origin, partial.text
            );
            found.push(Violation::placed(partial.turn.map(At::Turn), message));
        }
    });
    resumed.dedup_by_key(|(at, _)| *at);
    for (at, since) in resumed {
        let partial = &partials[at];
        let quoted = format!("{:?}", partial.text);
        if violations.iter().any(|violation| violation.message.contains(&quoted)) {
            continue;
        }
        let carried = |index: &usize| {
            let later_turn = requests[*index].turn.map(|turn| turn + 1) != partial.turn;
            later_turn
                && evidence.conversations.get(*index).is_some_and(|conversation| {
                    conversation
                        .messages
                        .iter()
                        .any(|message| matches!(message, Message::Assistant { text } if holds(text, &partial.text)))
                })
        };
        if let Some(index) = (since + 1..requests.len()).find(carried) {
            let message = format!(
                "request {} replays the partial assistant text of {} as assistant content, kept since request {} resumed its own turn from it: {quoted}",
                index + 1,
                partial.origin,
                since + 1
            );
            violations.push(Violation::placed(partial.turn.map(At::Turn), message));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{assistant, body, capture, check, user};
    use gauntlet_mock_provider::StreamEnd;
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
        use crate::judge::fixture::{check_played, requests, scenario};
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

    /// codex-acp retries a stream that failed after text with that text as an assistant message
    /// (a resume within the running turn: no replay), and keeps it in its history, so the next
    /// turn's request carries it: that is the replay, found though the message is not new there.
    #[test]
    fn a_resume_in_its_own_turn_is_no_replay_but_keeping_it_for_the_next_turn_is() {
        use crate::capture::Capture;
        use crate::judge::fixture::{check_played, requests, scenario};
        let text = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"partial_failed\"\n\
                    respond = [{ text = [\"Useful partial\"], then = \"disconnect\" }]\n\
                    [[turn]]\nprompt = \"Try again\"\nrespond = [{ text = [\"Done.\"] }]\n";
        let resumed = vec![user("Summarise"), assistant("Useful partial")];
        let mut next = resumed.clone();
        next.push(user("Try again"));
        let bodies = |later: Option<Vec<serde_json::Value>>| {
            let mut bodies = vec![body(vec![user("Summarise")]), body(resumed.clone())];
            bodies.extend(later.map(body));
            let mut capture = Capture { requests: requests(bodies), ..Capture::default() };
            for (request, turn) in capture.requests.iter_mut().zip([0, 0, 1]) {
                request.turn = Some(turn);
            }
            capture
        };
        let played = scenario(text);
        assert!(check_played(INVARIANT, &bodies(None), &played).is_empty());
        assert_eq!(
            check_played(INVARIANT, &bodies(Some(next)), &played),
            [
                "request 3 replays the partial assistant text of the failed response to request 1 as assistant content, kept since request 2 resumed its own turn from it: \"Useful partial\""
            ]
        );
    }

    /// A later turn whose clean answer begins with the partial's words (the whole answer a
    /// retry gave) carries that answer, not the partial: qwen-code's memory request after the
    /// second turn carries its answer "1. Fetch\n2. Build\n3. Test", begun by the partial.
    #[test]
    fn a_later_clean_answer_that_begins_with_the_partial_is_no_replay() {
        use crate::capture::Capture;
        use crate::judge::fixture::{check_played, requests, scenario};
        let text = "title = \"t\"\n[[turn]]\nprompt = \"List\"\nexpect = \"partial_failed\"\n\
                    respond = [{ text = [\"1. Fetch\\n2. Bui\"], then = \"disconnect\" }]\n\
                    [[turn]]\nprompt = \"Again\"\nrespond = [{ text = [\"1. Fetch\\n2. Build\"] }]\n";
        let bodies = vec![
            body(vec![user("List")]),
            body(vec![user("List"), assistant("1. Fetch\n2. Bui")]),
            body(vec![user("List"), user("Again")]),
            body(vec![user("List"), user("Again"), assistant("1. Fetch\n2. Build"), user("Remember?")]),
        ];
        let mut capture = Capture { requests: requests(bodies), ..Capture::default() };
        for (request, turn) in capture.requests.iter_mut().zip([0, 0, 1, 1]) {
            request.turn = Some(turn);
        }
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
    }

    /// A turn cancelled mid-stream (the client closed the stream in its stall): what it
    /// streamed is no answer, and an agent without a Log that sends it back as assistant
    /// content on the next turn is caught (issue 31: seed 000, `interrupted`).
    #[test]
    fn a_cancelled_turns_text_sent_back_is_caught() {
        use crate::capture::Capture;
        use crate::judge::fixture::{check_played, requests, scenario};
        use gauntlet_mock_provider::journal::{Ended, Timing};
        use std::time::Duration;
        let text = "title = \"t\"\n[[turn]]\nprompt = \"Build\"\ncancel = \"sent\"\nexpect = \"interrupted\"\n\
                    respond = [{ text = [\"The build \", \"is green\"], pause = { after = 5, ms = 60000 } }]\n\
                    [[turn]]\nprompt = \"Again\"\nrespond = [{ text = [\"Done.\"] }]\n";
        let ended = |how| Timing { received: Duration::ZERO, ended: Some(Ended { at: Duration::from_secs(1), how }) };
        let second = body(vec![user("Build"), assistant("The build "), user("Again")]);
        let capture = Capture {
            requests: requests(vec![body(vec![user("Build")]), second]),
            timings: vec![ended(StreamEnd::ClientClosed), ended(StreamEnd::Finished)],
            ..Capture::default()
        };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            [
                "request 2 replays the partial assistant text of the response to request 1 the client closed mid-stream as assistant content: \"The build \""
            ]
        );
    }
}
