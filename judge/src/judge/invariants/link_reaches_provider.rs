//! ACP-PROMPT-LINK-CARRIED: a prompt's `resource_link` is not silently dropped: a Provider
//! request of its turn names the link, by its URI or its name, in any message the model reads
//! (the prompt's own words aside, so a link its prompt names in passing is no evidence). ACP:
//! "As a baseline, the Agent MUST support `text` and `resource_link` content blocks"; that an
//! agent which supports a link tells its model of it is gauntlet's reading. An agent may write
//! the link into the prompt, read the resource and inline it under its name, or answer with an
//! error (a refused prompt asks no model, and is not judged).
//!
//! Evidence: the scenario's prompt links and each request's messages, read in the capture's
//! dialect and placed in turns ([`crate::judge::views::requests::request_turns`]), so with or without a
//! Log.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::asking_turns;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-PROMPT-LINK-CARRIED",
    also: &[],
    name: "link_reaches_provider",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if scenario.turns.iter().all(|turn| turn.links.is_empty()) {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for (turn_idx, turn, requests) in asking_turns(evidence, scenario, |turn| !turn.links.is_empty()) {
        // What the model read in the turn, the prompt's own words taken out.
        let read: Vec<String> = requests
            .iter()
            .filter_map(|&idx| evidence.conversations.get(idx))
            .flat_map(|conversation| conversation.messages.iter().filter_map(|message| message.text()))
            .map(|text| text.replace(turn.prompt.as_str(), ""))
            .collect();
        for link in &turn.links {
            let named = read.iter().any(|text| text.contains(link.uri.as_str()) || text.contains(link.name.as_str()));
            if !named {
                problems.push(format!(
                    "turn {}: the prompt's resource_link `{}` ({}) reached the model in none of the turn's {} Provider request(s) (from request {}): neither its URI nor its name is in what the model read",
                    turn_idx + 1,
                    link.name,
                    link.uri,
                    requests.len(),
                    requests[0] + 1
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, capture, check_played, scenario, user};

    fn linked() -> crate::scenario::Scenario {
        scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Summarise the attached spec.\"\nlinks = [{ uri = \"https://example.com/spec.md\", name = \"spec.md\" }]\nrespond = [{ text = [\"ok\"] }]\n",
        )
    }

    /// The link written into the prompt, or the resource inlined under its name, reaches the
    /// model; a request with the prompt's text alone drops it.
    #[test]
    fn a_link_the_model_never_reads_of_is_caught() {
        let carried = |text: &str| capture(&[], &[body(vec![user(text)])]);
        let written = carried("Summarise the attached spec.\n[spec.md](https://example.com/spec.md)");
        assert!(check_played(INVARIANT, &written, &linked()).is_empty());
        let inlined = carried("Summarise the attached spec.\n<file name=\"spec.md\">...</file>");
        assert!(check_played(INVARIANT, &inlined, &linked()).is_empty());
        assert_eq!(
            check_played(INVARIANT, &carried("Summarise the attached spec."), &linked()),
            [
                "turn 1: the prompt's resource_link `spec.md` (https://example.com/spec.md) reached the model in none of the turn's 1 Provider request(s) (from request 1): neither its URI nor its name is in what the model read"
            ]
        );
    }

    /// A prompt the agent refused asked no model: nothing to judge.
    #[test]
    fn a_turn_that_asked_nothing_is_not_judged() {
        assert!(check_played(INVARIANT, &capture(&[], &[]), &linked()).is_empty());
    }
}
