//! REPLAY-COMPACTION-KEEPS-PROMPT: the request after a compaction (one whose conversation no
//! longer starts with the previous request's messages, [`rewrites`]) still carries the latest
//! prompt: the text of the scenario turn the request belongs to, in a user message. Judged on
//! the wire, so an agent without a Log is held to it the same way.

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
    let mut problems = Vec::new();
    for (idx, ((_, conversation), rewritten)) in read_requests(evidence).zip(rewrites(evidence)).enumerate() {
        let Some(turn) = turns[idx].filter(|_| rewritten).and_then(|turn| scenario.turns.get(turn)) else { continue };
        if !conversation.user_texts().any(|text| text.contains(turn.prompt.as_str())) {
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

    fn played(after: Vec<serde_json::Value>) -> Vec<String> {
        use crate::judge::fixture::user;
        let text = "title = \"t\"\n[[turn]]\nprompt = \"one\"\nrespond = [{ text = [\"a\"] }]\n[[turn]]\nprompt = \"two\"\nrespond = [{ text = [\"s\"] }, { text = [\"b\"] }]\n";
        let bodies = vec![
            body(vec![user("one")]),
            body(vec![user("one"), assistant("a"), user("two")]),
            body(vec![user("one"), assistant("a"), user("two"), user("Summarise")]),
            body(after),
        ];
        let mut requests = requests(bodies);
        for (request, turn) in requests.iter_mut().zip([0, 1, 1, 1]) {
            request.turn = Some(turn);
        }
        check_played(INVARIANT, &Capture { requests, ..Capture::default() }, &scenario(text))
    }

    #[test]
    fn a_compacted_request_without_the_latest_prompt_is_caught() {
        use crate::judge::fixture::user;
        assert_eq!(played(vec![user("Summary: s"), user("two")]), Vec::<String>::new());
        assert_eq!(
            played(vec![user("Summary: s")]),
            ["request 4 rewrites the conversation (a compaction) without the latest prompt \"two\""]
        );
    }
}
