//! REPLAY-NO-DUPLICATE: a request carries each clean assistant answer once. An assistant text
//! that appears more often in one request's input than the script ever completed it is a
//! duplicated (or re-sent partial) message.

use std::collections::BTreeMap;

use super::{Invariant, Scope, read_requests, served};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-NO-DUPLICATE", also: &[], name: "no_duplicate_assistant", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (idx, (request, conversation)) in read_requests(evidence).enumerate() {
        let mut carried: BTreeMap<&str, usize> = BTreeMap::new();
        for text in conversation.assistant_texts().filter(|text| !text.is_empty()) {
            *carried.entry(text).or_default() += 1;
        }
        for (text, times) in carried {
            // Without a scenario the script is unknown: any repeat is a duplicate.
            let allowed = if evidence.scenario.is_some() { completed.get(text).copied().unwrap_or(0) } else { 1 };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{assistant, body, capture, check, user};

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
}
