//! ACP-REFUSAL-STOP-REASON: a turn whose answer was the model's explicit refusal (OpenAI's
//! `refusal`, read to its clean end) is answered `refusal` (ACP: "the agent refused to
//! continue") or an error, never `end_turn` or `max_tokens`, which take the refusal for an answer
//! the model gave or cut. Read from the script and the ACP transcript, so with or without a Log:
//! an agent that records a refusal as a plain completion is caught too.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::streamed_per_turn;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-REFUSAL-STOP-REASON", also: &[], name: "refusal_stop_reason", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    // The scenario's turns are the last ones of the transcript (a preloaded Log adds none).
    let first = live.len().saturating_sub(scenario.turns.len());
    let streamed = streamed_per_turn(evidence);
    let mut problems = Vec::new();
    for (idx, pieces) in streamed.iter().enumerate() {
        let Some(refusal) = pieces.last().filter(|piece| piece.clean && piece.refused) else { continue };
        let Some(answer) = live.get(first + idx).and_then(|exchange| exchange.answer) else { continue };
        let Some(reason) = answer.pointer("/result/stopReason").and_then(Value::as_str) else { continue };
        if reason != "refusal" {
            let n = idx + 1;
            let message = format!(
                "turn {n}: the model refused ({:?}) and the turn was answered with stop reason `{reason}`, not `refusal` or an error",
                refusal.text
            );
            problems.push(Violation::in_turn(n, message));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{body, capture, check_played, entry, prompt, scenario, user};

    /// A refusal answered `end_turn` is caught; `refusal` and an error pass.
    #[test]
    fn a_refusal_is_never_answered_end_turn() {
        let scenario = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Do it.\"\nrespond = [{ refusal = [\"I can't help with that.\"] }]\n",
        );
        let answered = |answer: Value| {
            let mut capture = capture(&[], &[body(vec![user("Do it.")])]);
            capture.requests[0].response_index = Some(0);
            capture.acp = vec![entry("client", prompt(3, "Do it.")), entry("agent", answer)];
            check_played(INVARIANT, &capture, &scenario)
        };
        assert_eq!(
            answered(json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}})),
            [
                "turn 1: the model refused (\"I can't help with that.\") and the turn was answered with stop reason `end_turn`, not `refusal` or an error"
            ]
        );
        assert!(answered(json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "refusal"}})).is_empty());
        let error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "refused"}});
        assert!(answered(error).is_empty());
    }
}
