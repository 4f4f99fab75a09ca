//! ACP-REFUSAL-LEAVES-CONVERSATION: a turn an agent answered `refusal` is not sent to the model
//! again. ACP v1 defines the stop reason so: "The turn ended because the agent refused to
//! continue. The user prompt and everything that comes after it won't be included in the next
//! prompt, so this should be reflected in the UI." A client that shows the turn as gone, while
//! the model is still sent it, shows the user a conversation the model does not have. v2's
//! `refusal` says no more than "the Agent refused to continue", so a v2 transcript is not
//! judged. Read from the requests and the answers alone, so it holds with or without a Log.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::request_turns;
use crate::scenario::AcpVersion;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-REFUSAL-LEAVES-CONVERSATION",
    also: &[],
    name: "refusal_leaves_conversation",
    applies: Scope::Run,
    check,
};

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if evidence.capture.acp_version != AcpVersion::V1 {
        return Vec::new();
    }
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    // The scenario's turns are the last ones of the transcript (a preloaded Log adds none).
    let first = live.len().saturating_sub(scenario.turns.len());
    let turns = request_turns(evidence);
    let mut problems = Vec::new();
    for (idx, turn) in scenario.turns.iter().enumerate() {
        let refused = live
            .get(first + idx)
            .and_then(|exchange| exchange.answer)
            .is_some_and(|answer| answer.pointer("/result/stopReason").and_then(Value::as_str) == Some("refusal"));
        if !refused {
            continue;
        }
        let carried = turns.iter().zip(evidence.conversations.iter()).enumerate().find(|(_, (later, conversation))| {
            later.is_some_and(|later| later > idx) && conversation.user_texts().any(|text| text == turn.prompt)
        });
        if let Some((request, _)) = carried {
            let n = idx + 1;
            problems.push(Violation::in_turn(
                n,
                format!(
                    "turn {n} was answered `refusal`, which says its prompt {:?} won't be included in the next prompt, yet request {} still sends it to the model",
                    turn.prompt,
                    request + 1
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{assistant, body, capture, check_played, entry, prompt, scenario, user};
    use serde_json::json;

    const REFUSED: &str = "title = \"t\"\n[[turn]]\nprompt = \"Do the forbidden thing\"\nstop_reason = \"refusal\"\n\
        respond = [{ refusal = [\"No.\"] }]\n[[turn]]\nprompt = \"Then list the files\"\nrespond = [{ text = [\"a.txt\"] }]\n";

    /// Two turns, the first answered `refusal`; the second turn's request carries `second`.
    fn played(second: Vec<Value>) -> crate::capture::Capture {
        let mut capture = capture(&[], &[body(vec![user("Do the forbidden thing")]), body(second)]);
        capture.log.clear();
        for (request, turn) in capture.requests.iter_mut().zip([0, 1]) {
            request.turn = Some(turn);
        }
        capture.acp = vec![
            entry("client", prompt(1, "Do the forbidden thing")),
            entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "refusal"}})),
            entry("client", prompt(2, "Then list the files")),
            entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
        ];
        capture
    }

    #[test]
    fn a_refused_turn_left_out_of_the_next_request_passes() {
        assert!(check_played(INVARIANT, &played(vec![user("Then list the files")]), &scenario(REFUSED)).is_empty());
    }

    /// An agent that answers `refusal` and still sends the refused prompt (and the refusal) to
    /// the model: v1 says it won't; v2 does not say so.
    #[test]
    fn a_refused_turn_still_sent_is_caught_in_v1_only() {
        let kept = played(vec![user("Do the forbidden thing"), assistant("No."), user("Then list the files")]);
        assert_eq!(
            check_played(INVARIANT, &kept, &scenario(REFUSED)),
            [
                "turn 1 was answered `refusal`, which says its prompt \"Do the forbidden thing\" won't be included in the next prompt, yet request 2 still sends it to the model"
            ]
        );
        let v2 = crate::capture::Capture { acp_version: AcpVersion::V2, ..kept };
        assert!(check_played(INVARIANT, &v2, &scenario(REFUSED)).is_empty());
    }
}
