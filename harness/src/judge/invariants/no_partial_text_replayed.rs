//! REPLAY-NO-PARTIAL: the text of a partial `assistant_message` never reaches the Provider as
//! assistant content in any request.

use super::{Invariant, input_items, item_texts};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-NO-PARTIAL", also: &[], name: "no_partial_text_replayed", check };

fn check(evidence: &Evidence) -> Vec<String> {
    let clean: Vec<&str> = evidence
        .lines
        .iter()
        .filter(|line| line.kind == "assistant_message" && !line.is_partial_assistant())
        .filter_map(|line| line.str_field("text"))
        .collect();
    let partials: Vec<(u64, &str)> = evidence
        .lines
        .iter()
        .filter(|line| line.is_partial_assistant())
        .filter_map(|line| Some((line.seq?, line.str_field("text")?)))
        .filter(|(_, text)| !text.is_empty() && !clean.contains(text))
        .collect();
    let mut problems = Vec::new();
    for (request_idx, request) in evidence.capture.requests.iter().enumerate() {
        for item in input_items(&request.body) {
            if item.get("role").and_then(|role| role.as_str()) != Some("assistant") {
                continue;
            }
            for text in item_texts(item) {
                for (seq, partial) in &partials {
                    if text.contains(partial) {
                        problems.push(format!(
                            "request {} replays the partial assistant text of seq {seq} as assistant content: {partial:?}",
                            request_idx + 1
                        ));
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{assistant, body, capture, check, user};
    use serde_json::json;

    fn partial_then_retry(second_request: Vec<serde_json::Value>) -> Vec<String> {
        let log = [
            ("user_message", json!({"text": "Summarise"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ("user_message", json!({"text": "Try again"})),
        ];
        check(INVARIANT, &capture(&log, &[body(vec![user("Summarise")]), body(second_request)]))
    }

    #[test]
    fn a_fold_that_replays_partial_text_is_caught() {
        // What a broken replay fold sends: the partial answer as if it were final.
        let broken = vec![user("Summarise"), assistant("Useful partial"), user("Try again")];
        assert_eq!(
            partial_then_retry(broken),
            ["request 2 replays the partial assistant text of seq 1 as assistant content: \"Useful partial\""]
        );
    }

    #[test]
    fn the_correct_fold_passes() {
        assert!(partial_then_retry(vec![user("Summarise"), user("Try again")]).is_empty());
    }
}
