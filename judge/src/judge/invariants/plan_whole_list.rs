//! ACP-PLAN-WHOLE-LIST: each ACP `plan` update carries the whole current to-do list, never a
//! delta: ACP replaces the client's list with each update (seed 004 `Pixir.Event.plan`:
//! "entries is the COMPLETE current plan ... never a delta").
//!
//! Evidence: the live transcript's `plan` updates, in order, and the scenario's scripted calls
//! of the abstract `plan` tool (each the model's complete list, in the agent's own to-do tool
//! through its profile). An update is judged against the one before it: every entry of the
//! previous update that the model's latest plan call still holds must be in it. An update
//! that drops such an entry leaves the client showing less than the model's list, which is
//! what a delta does. Entries are compared by `content`: a status or priority may change, an
//! entry the model's latest call removed may go. The latest call is the first call, from the
//! last one matched on, that holds exactly the update's entries, else the first that holds
//! them all (a delta shows a part of its call); an update no call holds (an agent's own
//! entries) is matched to the last call matched on.
//! An agent that shows no plan at all breaks nothing here (ACP lets an agent share a plan; it
//! does not require it): that is the expectation's to say, against a MAY row.

use std::collections::BTreeSet;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::{Entry, entries, plan_updates};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-PLAN-WHOLE-LIST",
    also: &[],
    name: "plan_whole_list",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let calls: Vec<Vec<Entry>> = scenario
        .root_responses()
        .flat_map(|response| &response.calls)
        .filter(|call| call.name == "plan")
        .map(|call| entries(call.args.get("entries")))
        .collect();
    judge(&plan_updates(evidence), &calls)
}

/// The findings over the `updates` given the model's `calls`. An update is matched to a call
/// by its entries with their statuses (the call it shows, whole or in part), then by content
/// alone (an agent that words a status its own way); it is judged by content.
fn judge(updates: &[Vec<Entry>], calls: &[Vec<Entry>]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut latest = 0;
    for (idx, pair) in updates.windows(2).enumerate() {
        let (previous, update) = (&pair[0], &pair[1]);
        let shown_pairs: BTreeSet<&Entry> = update.iter().collect();
        let shown: BTreeSet<&str> = update.iter().map(|(content, _)| content.as_str()).collect();
        let pairs = |call: usize| -> BTreeSet<&Entry> { calls[call].iter().collect() };
        let contents =
            |call: usize| -> BTreeSet<&str> { calls[call].iter().map(|(content, _)| content.as_str()).collect() };
        let candidates = latest..calls.len();
        let matched = candidates
            .clone()
            .find(|&call| pairs(call) == shown_pairs)
            .or_else(|| candidates.clone().find(|&call| shown_pairs.is_subset(&pairs(call))))
            .or_else(|| candidates.clone().find(|&call| contents(call) == shown))
            .or_else(|| candidates.clone().find(|&call| shown.is_subset(&contents(call))));
        if let Some(call) = matched {
            latest = call;
        }
        if latest >= calls.len() {
            continue;
        }
        let held = contents(latest);
        let dropped: Vec<&str> = previous
            .iter()
            .map(|(content, _)| content.as_str())
            .filter(|content| held.contains(content) && !shown.contains(content))
            .collect();
        if !dropped.is_empty() {
            let update: Vec<&str> = shown_order(update);
            problems.push(format!(
                "plan update {} shows {update:?} and drops {dropped:?}, entries of plan update {} that the model's latest plan call (call {}) still holds: ACP replaces the client's whole list with each update, so this update is a delta, not the complete list",
                idx + 2,
                idx + 1,
                latest + 1
            ));
        }
    }
    problems
}

/// An update's contents, in its order.
fn shown_order(update: &[Entry]) -> Vec<&str> {
    update.iter().map(|(content, _)| content.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<Entry> {
        items.iter().map(|item| ((*item).to_owned(), "pending".to_owned())).collect()
    }

    #[test]
    fn whole_lists_pass_and_an_entry_the_model_removed_may_go() {
        let calls = [list(&["a", "b", "c"]), list(&["a", "b", "c", "d"]), list(&["a", "d"])];
        let updates = [list(&["a", "b", "c"]), list(&["a", "b", "c"]), list(&["a", "b", "c", "d"]), list(&["a", "d"])];
        assert!(judge(&updates, &calls).is_empty());
    }

    #[test]
    fn a_delta_is_named_with_what_it_dropped() {
        let calls = [list(&["a", "b", "c"]), list(&["a", "b", "c"]), list(&["a", "b", "c", "d"])];
        let updates = [list(&["a", "b", "c"]), list(&["b"]), list(&["d"])];
        let problems = judge(&updates, &calls);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with(r#"plan update 2 shows ["b"] and drops ["a", "c"]"#), "{}", problems[0]);
        assert!(problems[1].contains(r#"drops ["b"]"#), "{}", problems[1]);
        assert!(problems[1].contains("(call 3)"), "{}", problems[1]);
    }

    #[test]
    fn a_status_change_is_matched_to_the_call_that_made_it() {
        let entry = |content: &str, status: &str| (content.to_owned(), status.to_owned());
        let first = vec![entry("a", "in_progress"), entry("b", "pending"), entry("c", "pending")];
        let second = vec![entry("a", "completed"), entry("b", "in_progress"), entry("c", "pending")];
        let delta = vec![entry("a", "completed"), entry("b", "in_progress")];
        let problems = judge(&[first.clone(), delta], &[first, second]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains(r#"drops ["c"]"#) && problems[0].contains("(call 2)"), "{}", problems[0]);
    }

    #[test]
    fn no_updates_or_one_update_is_no_finding() {
        let calls = [list(&["a"])];
        assert!(judge(&[], &calls).is_empty());
        assert!(judge(&[list(&["a"])], &calls).is_empty());
    }
}
