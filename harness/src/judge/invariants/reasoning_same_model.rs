//! REPLAY-REASONING-SAME-MODEL: a reasoning item the Log recorded is replayed, verbatim, to the
//! model that produced it, and never to another. Judged on each request against the Log's
//! `reasoning` events of earlier turns (recorded before the request's turn began, so surely
//! before it was sent): each one of the request's model must be carried with its payload
//! (the encrypted content or signature, else its text), and none of another model may be.
//! REPLAY-CARRIES-CONVERSATION leaves reasoning to this rule.

use std::collections::HashSet;

use gauntlet_mock_provider::Message;

use super::{Invariant, Scope, read_requests};
use crate::judge::{Evidence, LogRole};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-REASONING-SAME-MODEL",
    also: &[],
    name: "reasoning_same_model",
    scope: Scope::Replay,
    check,
};

/// A recorded reasoning item: its seq, the model that produced it and its payload.
struct Recorded<'a> {
    seq: u64,
    model: &'a str,
    payload: &'a str,
}

fn check(evidence: &Evidence) -> Vec<String> {
    let lines = &evidence.lines;
    let recorded: Vec<Recorded> = lines
        .iter()
        .filter(|line| line.kind == "reasoning")
        .filter_map(|line| {
            let item = line.data.get("item")?;
            let payload = item
                .get("encrypted_content")
                .and_then(|value| value.as_str())
                .or_else(|| item.pointer("/summary/0/text").and_then(|value| value.as_str()))?;
            Some(Recorded { seq: line.seq?, model: line.str_field("model")?, payload })
        })
        .collect();
    if recorded.is_empty() {
        return Vec::new();
    }
    let users: Vec<(u64, &str)> = lines
        .iter()
        .filter(|line| line.kind == "user_message")
        .filter_map(|line| Some((line.seq?, line.str_field("text")?)))
        .collect();
    let mut problems = Vec::new();
    for (idx, (request, conversation)) in read_requests(evidence).enumerate() {
        if evidence.role == LogRole::Root && request.route != gauntlet_mock_provider::ROOT {
            continue;
        }
        let Some(model) = conversation.model.or(request.model.as_deref()) else { continue };
        // The request's turn began at the last of the Log's prompts it carries.
        let carried_users: HashSet<&str> = conversation.user_texts().collect();
        let Some(&(turn_seq, _)) = users.iter().rev().find(|(_, text)| carried_users.contains(text)) else { continue };
        let carried: Vec<(&str, Option<&str>)> = conversation
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::Reasoning { text, opaque } => Some((text.as_str(), opaque.as_deref())),
                _ => None,
            })
            .collect();
        let carries = |payload: &str| carried.iter().any(|(text, opaque)| *opaque == Some(payload) || *text == payload);
        let n = idx + 1;
        for item in recorded.iter().filter(|item| item.seq < turn_seq) {
            if item.model == model && !carries(item.payload) {
                problems.push(format!(
                    "request {n} to {model} does not carry the reasoning {:?} that {model} produced at seq {}",
                    item.payload, item.seq
                ));
            }
        }
        for item in recorded.iter().filter(|item| item.model != model && carries(item.payload)) {
            if !recorded.iter().any(|same| same.model == model && same.payload == item.payload) {
                problems.push(format!(
                    "request {n} to {model} carries the reasoning {:?} that {} produced at seq {}",
                    item.payload, item.model, item.seq
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::invariants::fixture::{assistant, capture, check, user};

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
}
