//! REPLAY-NO-DUPLICATE: a request carries each clean assistant answer once. An assistant text
//! that appears more often in one request's input than the script ever completed it is a
//! duplicated message. A failed attempt's partial text is REPLAY-NO-PARTIAL's, however often it
//! is carried: one fault is one finding.

use std::collections::{BTreeMap, HashMap};

use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::partials::partial_texts;
use crate::judge::views::requests::{read_new_messages, served};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-NO-DUPLICATE",
    also: &[],
    name: "no_duplicate_assistant",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let (_, partials) = partial_texts(evidence);
    let partial = |text: &str| partials.iter().any(|partial| partial.text == text);
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    let mut runs: BTreeMap<usize, Carried> = BTreeMap::new();
    let mut problems = Vec::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        let run = runs.entry(conversation.run).or_default();
        for message in new {
            if let Message::Assistant { text } = message
                && !text.is_empty()
                && !partial(text)
            {
                let times = run.times.entry(text).or_default();
                *times += 1;
                if *times > 1 {
                    run.repeated.insert(text, *times);
                }
            }
        }
        for (text, &times) in &run.repeated {
            // Without a scenario the script is unknown: any repeat is a duplicate.
            let allowed = if evidence.scenario.is_some() { completed.get(*text).copied().unwrap_or(0) } else { 1 };
            if times > allowed.max(1) {
                problems.push(format!("request {} carries the assistant text {text:?} {times} times", idx + 1));
            }
        }
        if let Some(response) = served(evidence, request).filter(|response| !response.fails()) {
            *completed.entry(response.visible_text()).or_default() += 1;
        }
    }
    problems
}

/// The assistant texts of a run's messages read so far.
#[derive(Default)]
struct Carried<'a> {
    times: HashMap<&'a str, usize>,
    /// The texts carried more than once, with how often: the only ones that can be duplicates.
    repeated: BTreeMap<&'a str, usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{assistant, body, capture, check, user};

    #[test]
    fn an_answer_replayed_twice_is_caught() {
        let bodies = [body(vec![user("a")]), body(vec![user("a"), assistant("Done."), assistant("Done."), user("b")])];
        assert_eq!(
            check(INVARIANT, &capture(&[], &bodies)),
            ["request 2 carries the assistant text \"Done.\" 2 times"]
        );
        let once = [body(vec![user("a")]), body(vec![user("a"), assistant("Done."), user("b")])];
        assert!(check(INVARIANT, &capture(&[], &once)).is_empty());
    }

    #[test]
    fn a_partial_carried_twice_is_left_to_replay_no_partial() {
        let log = [
            ("user_message", serde_json::json!({"text": "a"})),
            ("assistant_message", serde_json::json!({"text": "Use", "metadata": {"partial": true}})),
        ];
        let bodies = [body(vec![user("a")]), body(vec![user("a"), assistant("Use"), assistant("Use")])];
        assert!(check(INVARIANT, &capture(&log, &bodies)).is_empty());
    }

    /// Counted as the conversation grows: a duplicate stays one in every later request of its
    /// run, and a conversation that starts over is counted afresh.
    #[test]
    fn a_duplicate_is_counted_in_every_request_that_carries_it() {
        let twice = vec![user("a"), assistant("Done."), assistant("Done.")];
        let mut grown = twice.clone();
        grown.push(user("b"));
        let bodies = [body(twice), body(grown), body(vec![user("c"), assistant("Done.")])];
        assert_eq!(
            check(INVARIANT, &capture(&[], &bodies)),
            [
                "request 1 carries the assistant text \"Done.\" 2 times",
                "request 2 carries the assistant text \"Done.\" 2 times",
            ]
        );
    }
}
