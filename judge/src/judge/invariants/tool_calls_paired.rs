//! REPLAY-TOOL-PAIRING: in every request, each tool call (`function_call`, an assistant
//! `tool_calls` entry, ...) has exactly one result after it, each result has its call, and no
//! call id is empty, read in any dialect as a [`Conversation`](gauntlet_mock_provider::Conversation).
//! A request after a compaction is one of them (REPLAY-COMPACTION-KEEPS-PAIRS).
//!
//! Also REPLAY-CALL-ID-UNIQUE ([`UNIQUE`]): no two calls of a request share a call id, so no
//! result pairs with two calls (a model that repeats an id within one response is the
//! agent's to tell apart; the Anthropic Messages API refuses repeated `tool_use` ids). That the
//! agent then keeps both calls is the reference's choice ([`BOTH_KEPT`], a MAY): an agent that
//! merges them into one keeps ids unique and pairs correctly, and no source asks more.

use std::collections::{BTreeMap, BTreeSet};

use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{read_new_messages, repeated_id, served};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-TOOL-PAIRING",
    also: &["REPLAY-COMPACTION-KEEPS-PAIRS", UNIQUE, BOTH_KEPT],
    name: "tool_calls_paired",
    applies: Scope::Replay,
    check,
};

/// What a request breaks when two of its calls share a call id.
const UNIQUE: &str = "REPLAY-CALL-ID-UNIQUE";

/// What a request that carries fewer calls than a response with a repeated id made departs
/// from: the reference's way of telling them apart.
const BOTH_KEPT: &str = "REPLAY-CALL-ID-BOTH-KEPT";

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mut runs: BTreeMap<usize, Pairing> = BTreeMap::new();
    // A response whose calls repeat an id, by the run whose next request must carry its
    // calls: how many it made, and the id.
    let mut owed: BTreeMap<usize, (usize, &str)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (request_idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        let n = request_idx + 1;
        // An agent that collapses two calls of one id into one tells the model of one call
        // and one result only: unique ids, paired, but not the reference's way.
        if let Some((made, id)) = owed.remove(&conversation.run) {
            let carried = new.iter().filter(|message| matches!(message, Message::ToolCall { .. })).count();
            if carried < made {
                let message = format!(
                    "request {n} carries {carried} of the {made} calls the model gave, two of them with the id `{id}`: a call and its result are gone from the conversation"
                );
                problems.push(Violation::new(message).of(BOTH_KEPT));
            }
        }
        if let Some(response) = served(evidence, request)
            && let Some(id) = repeated_id(response)
        {
            owed.insert(conversation.run, (response.calls.len(), id));
        }
        let run = runs.entry(conversation.run).or_default();
        for message in new {
            run.read(message);
        }
        problems.extend(run.found.iter().map(|what| Violation::new(format!("request {n} {what}"))));
        // An id that names two calls is REPLAY-CALL-ID-UNIQUE's: how many outputs it has then
        // follows from the one behaviour, reported once.
        for id in run.unpaired.iter().filter(|id| run.named.get(*id).copied().unwrap_or_default() <= 1) {
            let count = run.calls.get(id).copied().unwrap_or_default();
            problems.push(Violation::new(format!("request {n}: call `{id}` has {count} outputs, expected 1")));
        }
        for (id, count) in run.named.iter().filter(|(_, count)| **count > 1) {
            let message =
                format!("request {n}: call id `{id}` names {count} calls, so a result pairs with more than one");
            problems.push(Violation::new(message).of(UNIQUE));
        }
    }
    problems
}

/// The calls and results of a run's messages read so far.
#[derive(Default)]
struct Pairing<'a> {
    /// call_id -> outputs seen so far (since its last call).
    calls: BTreeMap<&'a str, usize>,
    /// call_id -> how many calls carry it.
    named: BTreeMap<&'a str, usize>,
    /// The calls without exactly one output.
    unpaired: BTreeSet<&'a str>,
    /// What single messages were found to be.
    found: Vec<String>,
}

impl<'a> Pairing<'a> {
    fn read(&mut self, message: &'a Message) {
        let call_id = match message {
            Message::ToolCall { call_id, .. } if !call_id.is_empty() => {
                self.calls.insert(call_id, 0);
                *self.named.entry(call_id).or_default() += 1;
                call_id
            }
            Message::ToolCall { .. } => return self.found.push("has a function_call without a call_id".to_owned()),
            Message::ToolResult { call_id, .. } => match self.calls.get_mut(call_id.as_str()) {
                Some(count) => {
                    *count += 1;
                    call_id
                }
                None => return self.found.push(format!("has an output for unknown call {:?}", Some(call_id))),
            },
            _ => return,
        };
        if self.calls.get(call_id.as_str()) == Some(&1) {
            self.unpaired.remove(call_id.as_str());
        } else {
            self.unpaired.insert(call_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, capture, check};
    use serde_json::json;

    /// Two calls sharing an id, each answered in turn, look paired one by one; the id still
    /// names two calls, so each result pairs with both.
    #[test]
    fn a_call_id_carried_by_two_calls_is_caught() {
        let call = |path: &str| json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": path});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": ""});
        let one_by_one =
            capture(&[], &[body(vec![call("{}"), output.clone(), call("{\"path\":\"b\"}"), output.clone()])]);
        assert_eq!(
            crate::judge::fixture::check_as(INVARIANT, UNIQUE, &one_by_one),
            ["request 1: call id `c1` names 2 calls, so a result pairs with more than one"]
        );
        // Both calls, then both results (codex-acp's shape): the one finding, not a second one
        // for the outputs the repeated id has.
        let together = capture(&[], &[body(vec![call("{}"), call("{\"path\":\"b\"}"), output.clone(), output])]);
        assert_eq!(
            check(INVARIANT, &together),
            ["request 1: call id `c1` names 2 calls, so a result pairs with more than one"]
        );
    }

    /// Two calls the model gave one id, collapsed into one call and one result in the next
    /// request (opencode's shape: the model is told of one read only): ids unique and paired,
    /// so not REPLAY-CALL-ID-UNIQUE's, but not the reference's way either (issue 45).
    #[test]
    fn two_calls_of_one_id_collapsed_into_one_are_a_may() {
        let scenario = crate::judge::fixture::scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"p\"\nrespond = [{ calls = [{ name = \"read\", args = { path = \"a\" }, call_id = \"c1\" }, \
             { name = \"read\", args = { path = \"b\" }, call_id = \"c1\" }] }, { text = [\"x\"] }]\n",
        );
        let call = json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"b\"}"});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "B"});
        let mut collapsed = capture(&[], &[body(vec![]), body(vec![call, output])]);
        for (request, index) in collapsed.requests.iter_mut().zip([0, 1]) {
            request.response_index = Some(index);
        }
        assert_eq!(
            crate::judge::fixture::check_played_as(INVARIANT, UNIQUE, &collapsed, &scenario),
            Vec::<String>::new()
        );
        assert_eq!(
            crate::judge::fixture::check_played_as(INVARIANT, BOTH_KEPT, &collapsed, &scenario),
            [
                "request 2 carries 1 of the 2 calls the model gave, two of them with the id `c1`: a call and its result are gone from the conversation"
            ]
        );
    }

    #[test]
    fn an_unanswered_call_is_caught() {
        let call = json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"});
        let capture = capture(&[], &[body(vec![call])]);
        assert_eq!(check(INVARIANT, &capture), ["request 1: call `c1` has 0 outputs, expected 1"]);
    }

    /// Read as the conversation grows: what a request carries stays wrong in every later
    /// request that carries it too, a call answered later is paired from then on, and a
    /// conversation that starts over is read afresh.
    #[test]
    fn findings_follow_the_messages_that_carry_them() {
        let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": "{}"});
        let output = |id: &str| json!({"type": "function_call_output", "call_id": id, "output": ""});
        let first = vec![output("x"), call("c1")];
        let mut grown = first.clone();
        grown.extend([output("c1"), call("c2"), output("c2"), output("c2")]);
        let capture = capture(&[], &[body(first), body(grown), body(vec![call("c3"), output("c3")])]);
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "request 1 has an output for unknown call Some(\"x\")",
                "request 1: call `c1` has 0 outputs, expected 1",
                "request 2 has an output for unknown call Some(\"x\")",
                "request 2: call `c2` has 2 outputs, expected 1",
            ]
        );
    }
}
