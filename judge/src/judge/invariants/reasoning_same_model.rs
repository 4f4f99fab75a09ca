//! REPLAY-REASONING-SAME-MODEL: a reasoning item the Log recorded is replayed, verbatim, to the
//! model that produced it, and never to another. Judged on each request against the Log's
//! `reasoning` events of earlier turns (recorded before the request's turn began, so surely
//! before it was sent): each one of the request's model must be carried with its payload
//! (the encrypted content or signature, else its text), and none of another model may be.
//! REPLAY-CARRIES-CONVERSATION leaves reasoning to this rule.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use gauntlet_mock_provider::Message;

use crate::judge::evidence::{Evidence, LogRole};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{Prompts, read_new_messages};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-REASONING-SAME-MODEL",
    also: &[],
    name: "reasoning_same_model",
    applies: Scope::Replay,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// A recorded reasoning item: its seq, the model that produced it and its payload.
struct Recorded<'a> {
    seq: u64,
    model: &'a str,
    payload: &'a str,
}

fn check(evidence: &Evidence) -> Vec<String> {
    let lines = &evidence.lines;
    let mut recorded: Vec<Recorded> = lines
        .iter()
        .filter_map(|line| {
            let reasoning = line.reasoning()?;
            let item = reasoning.item?;
            let payload = item
                .get("encrypted_content")
                .and_then(|value| value.as_str())
                .or_else(|| item.pointer("/summary/0/text").and_then(|value| value.as_str()))?;
            Some(Recorded { seq: line.seq?, model: reasoning.model?, payload })
        })
        .collect();
    if recorded.is_empty() {
        return Vec::new();
    }
    recorded.sort_by_key(|item| item.seq);
    let mut by_payload: HashMap<&str, Vec<usize>> = HashMap::new();
    for (at, item) in recorded.iter().enumerate() {
        by_payload.entry(item.payload).or_default().push(at);
    }
    let prompts = Prompts::of(lines);
    let mut runs: BTreeMap<usize, Run> = BTreeMap::new();
    let mut problems = Vec::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        if evidence.role == LogRole::Root && request.route != gauntlet_mock_provider::ROOT {
            continue;
        }
        let run = runs.entry(conversation.run).or_default();
        run.grow(new, &prompts, &by_payload);
        let Some(model) = conversation.model.or(request.model.as_deref()) else { continue };
        // The request's turn began at the last of the Log's prompts it carries.
        let Some(turn_seq) = run.turn.and_then(|turn| lines[prompts.lines[turn]].seq) else { continue };
        let n = idx + 1;
        // The model's items recorded before the turn, each checked once: the run only grows,
        // so an item carried stays carried, and only those missing so far are looked at again.
        let check = run.by_model.entry(model).or_default();
        while let Some(item) = recorded.get(check.checked).filter(|item| item.seq < turn_seq) {
            if item.model == model {
                check.missing.push(check.checked);
            }
            check.checked += 1;
        }
        check.missing.retain(|&at| !run.payloads.contains(recorded[at].payload));
        for &at in &check.missing {
            let item = &recorded[at];
            problems.push(format!(
                "request {n} to {model} does not carry the reasoning {:?} that {model} produced at seq {}",
                item.payload, item.seq
            ));
        }
        let foreign = run.carried.iter().filter(|&&at| recorded[at].model != model);
        for item in foreign.map(|&at| &recorded[at]) {
            let produced_too = by_payload[item.payload].iter().any(|&same| recorded[same].model == model);
            if !produced_too {
                problems.push(format!(
                    "request {n} to {model} carries the reasoning {:?} that {} produced at seq {}",
                    item.payload, item.model, item.seq
                ));
            }
        }
    }
    problems
}

/// What a run of messages carries, read once as its requests grow.
#[derive(Default)]
struct Run<'a> {
    /// Every reasoning text and opaque payload carried.
    payloads: HashSet<&'a str>,
    /// The recorded items whose payload is carried, in seq order.
    carried: BTreeSet<usize>,
    /// The last of the Log's prompts carried (an index into them).
    turn: Option<usize>,
    /// Per model asked: how far the recorded items were checked, and those still missing.
    by_model: HashMap<&'a str, Check>,
}

#[derive(Default)]
struct Check {
    checked: usize,
    missing: Vec<usize>,
}

impl<'a> Run<'a> {
    fn grow(&mut self, new: &'a [Message], prompts: &Prompts<'_>, by_payload: &HashMap<&str, Vec<usize>>) {
        for message in new {
            match message {
                Message::User { .. } => self.turn = self.turn.max(prompts.carried_by(message)),
                Message::Reasoning { text, opaque } => {
                    for payload in std::iter::once(text.as_str()).chain(opaque.as_deref()) {
                        if self.payloads.insert(payload) {
                            self.carried.extend(by_payload.get(payload).into_iter().flatten());
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::{assistant, capture, check, user};

    fn log() -> Vec<(&'static str, Value)> {
        vec![
            ("user_message", json!({"text": "Plan"})),
            ("provider_usage", json!({})),
            (
                "reasoning",
                json!({"model": "big", "item": {"type": "reasoning", "encrypted_content": "ENC-1",
                "summary": [{"type": "summary_text", "text": "Split"}]}}),
            ),
            ("assistant_message", json!({"text": "Split it."})),
            ("user_message", json!({"text": "Tests?"})),
        ]
    }

    fn reasoning() -> Value {
        json!({"type": "reasoning", "encrypted_content": "ENC-1", "summary": [{"type": "summary_text", "text": "Split"}]})
    }

    fn request(model: &str, with_reasoning: bool) -> Value {
        let mut input = vec![user("Plan")];
        if with_reasoning {
            input.push(reasoning());
        }
        input.extend([assistant("Split it."), user("Tests?")]);
        json!({"model": model, "input": input, "store": false, "stream": true})
    }

    #[test]
    fn same_model_reasoning_is_carried_and_no_other_models() {
        let ok = [request("big", false), request("big", true), request("small", false)];
        let mut bodies = ok.to_vec();
        bodies[0] = json!({"model": "big", "input": [user("Plan")], "store": false, "stream": true});
        assert_eq!(check(INVARIANT, &capture(&log(), &bodies)), Vec::<String>::new());
        let wrong = [json!({"model": "big", "input": [user("Plan")]}), request("big", false), request("small", true)];
        assert_eq!(
            check(INVARIANT, &capture(&log(), &wrong)),
            [
                "request 2 to big does not carry the reasoning \"ENC-1\" that big produced at seq 2",
                "request 3 to small carries the reasoning \"ENC-1\" that big produced at seq 2",
            ]
        );
    }

    /// Read as a run grows: an item missing from one request is missing from every later
    /// request of its run that does not carry it, and a later turn checks the items before it.
    #[test]
    fn a_missing_item_stays_missing_as_the_run_grows() {
        let mut events = log();
        events.extend([
            ("assistant_message", json!({"text": "Yes."})),
            ("reasoning", json!({"model": "big", "item": {"type": "reasoning", "encrypted_content": "ENC-2"}})),
            ("user_message", json!({"text": "Ship?"})),
        ]);
        let grown = json!({"model": "big", "input": [user("Plan"), assistant("Split it."), user("Tests?"), assistant("Yes."), user("Ship?")]});
        let bodies = [json!({"model": "big", "input": [user("Plan")]}), request("big", false), grown];
        assert_eq!(
            check(INVARIANT, &capture(&events, &bodies)),
            [
                "request 2 to big does not carry the reasoning \"ENC-1\" that big produced at seq 2",
                "request 3 to big does not carry the reasoning \"ENC-1\" that big produced at seq 2",
                "request 3 to big does not carry the reasoning \"ENC-2\" that big produced at seq 6",
            ]
        );
    }
}
