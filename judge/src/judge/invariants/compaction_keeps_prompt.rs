//! REPLAY-COMPACTION-KEEPS-PROMPT: the request after a compaction (one whose conversation no
//! longer starts with the previous request's messages, [`rewrites`]) still carries the latest
//! prompt: the text of the scenario turn the request belongs to, in a user message, or the
//! request before it on its route (the one asking for the summary) did, so the summary was
//! asked to keep it (Claude Code summarises the prompt in progress with the rest). Judged on
//! the wire, so an agent without a Log is held to it the same way.

use std::collections::HashMap;

use crate::judge::conversations::Conversation;
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{read_requests, request_turns, rewrites};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-COMPACTION-KEEPS-PROMPT",
    also: &[],
    name: "compaction_keeps_prompt",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let turns = request_turns(evidence);
    let mut previous = HashMap::new();
    let mut problems = Vec::new();
    for (idx, ((request, conversation), rewritten)) in read_requests(evidence).zip(rewrites(evidence)).enumerate() {
        let before = previous.insert(request.route.as_str(), conversation);
        let Some(turn) = turns[idx].filter(|_| rewritten).and_then(|turn| scenario.turns.get(turn)) else { continue };
        let carries =
            |conversation: &Conversation| conversation.user_texts().any(|text| text.contains(turn.prompt.as_str()));
        if !carries(&conversation) && !before.as_ref().is_some_and(carries) {
            problems.push(format!(
                "request {} rewrites the conversation (a compaction) without the latest prompt {:?}",
                idx + 1,
                turn.prompt
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{assistant, body, check_played, requests, scenario};

    /// Turn "two" compacts: a summary request, then `after`.
    fn played(summary_request: Vec<serde_json::Value>, after: Vec<serde_json::Value>) -> Vec<String> {
        use crate::judge::fixture::user;
        let text = "title = \"t\"\n[[turn]]\nprompt = \"one\"\nrespond = [{ text = [\"a\"] }]\n[[turn]]\nprompt = \"two\"\nrespond = [{ text = [\"s\"] }, { text = [\"b\"] }]\n";
        let bodies = vec![body(vec![user("one")]), body(summary_request), body(after)];
        let mut requests = requests(bodies);
        for (request, turn) in requests.iter_mut().zip([0, 1, 1]) {
            request.turn = Some(turn);
        }
        check_played(INVARIANT, &Capture { requests, ..Capture::default() }, &scenario(text))
    }

    #[test]
    fn a_compacted_request_without_the_latest_prompt_is_caught() {
        use crate::judge::fixture::user;
        let before_the_turn = || vec![user("one"), assistant("a"), user("Summarise")];
        assert_eq!(played(before_the_turn(), vec![user("Summary: s"), user("two")]), Vec::<String>::new());
        assert_eq!(
            played(before_the_turn(), vec![user("Summary: s")]),
            ["request 3 rewrites the conversation (a compaction) without the latest prompt \"two\""]
        );
    }

    #[test]
    fn a_prompt_given_to_the_summary_is_kept() {
        use crate::judge::fixture::user;
        let with_the_prompt = vec![user("one"), assistant("a"), user("two"), user("Summarise")];
        assert_eq!(played(with_the_prompt, vec![user("Summary: s")]), Vec::<String>::new());
    }
}
