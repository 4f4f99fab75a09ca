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

use serde_json::Value;

use super::{Invariant, Scope};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-PLAN-WHOLE-LIST", also: &[], name: "plan_whole_list", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let calls: Vec<Vec<String>> = scenario
        .root_responses()
        .flat_map(|response| &response.calls)
        .filter(|call| call.name == "plan")
        .map(|call| contents(call.args.get("entries")))
        .collect();
    judge(&plan_updates(evidence), &calls)
}

/// The entry contents of each live `plan` update, in order.
pub(crate) fn plan_updates(evidence: &Evidence) -> Vec<Vec<String>> {
    evidence
        .capture
        .acp
        .iter()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| update.get("sessionUpdate").and_then(Value::as_str) == Some("plan"))
        .map(|update| contents(update.get("entries")))
        .collect()
}

/// The `content` of each entry of a list.
fn contents(entries: Option<&Value>) -> Vec<String> {
    entries
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .map(|entry| entry.get("content").and_then(Value::as_str).unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The findings over `updates` (each update's contents) given the model's `calls`.
fn judge(updates: &[Vec<String>], calls: &[Vec<String>]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut latest = 0;
    for (idx, pair) in updates.windows(2).enumerate() {
        let (previous, update) = (&pair[0], &pair[1]);
        let shown: BTreeSet<&str> = update.iter().map(String::as_str).collect();
        let holds = |call: usize| -> BTreeSet<&str> { calls[call].iter().map(String::as_str).collect() };
        let same = (latest..calls.len()).find(|&call| holds(call) == shown);
        if let Some(call) = same.or_else(|| (latest..calls.len()).find(|&call| shown.is_subset(&holds(call)))) {
            latest = call;
        }
        let Some(call) = calls.get(latest) else { continue };
        let held: BTreeSet<&str> = call.iter().map(String::as_str).collect();
        let dropped: Vec<&str> = previous
            .iter()
            .map(String::as_str)
            .filter(|content| held.contains(content) && !shown.contains(content))
            .collect();
        if !dropped.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
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
    fn no_updates_or_one_update_is_no_finding() {
        let calls = [list(&["a"])];
        assert!(judge(&[], &calls).is_empty());
        assert!(judge(&[list(&["a"])], &calls).is_empty());
    }
}
