//! ACP-RESUME-KEEPS-CONTEXT: a resumed Session goes on with its conversation: the agent that
//! advertises `sessionCapabilities.resume` does not refuse to resume a Session it served, and
//! the first Provider request of the turn after the resume carries every earlier turn's prompt
//! (ACP "Resuming Sessions": the Agent "restores the session context ... and returns once the
//! session is ready to continue"; that the context is the conversation the model is sent is
//! gauntlet's reading). Read from the requests alone, so it holds with or without a Log.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::transcript::{answer_to, sent};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::request_turns;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-RESUME-KEEPS-CONTEXT", also: &[], name: "resume_keeps_context", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let transcript = &evidence.capture.acp;
    let mut problems = Vec::new();
    for resume in sent(transcript, "session/resume") {
        if let Some((_, answer)) = answer_to(transcript, &resume)
            && let Some(error) = answer.get("error")
        {
            let session_id = resume.session_id().unwrap_or_default();
            problems.push(Violation::new(format!(
                "session/resume of Session `{session_id}`, which the agent served, was refused ({error}): the \
                 conversation could not go on"
            )));
        }
    }
    let Some(scenario) = evidence.scenario else { return problems };
    let turns = request_turns(evidence);
    for turn_idx in scenario.turns.iter().enumerate().filter(|(_, turn)| turn.resume).map(|(idx, _)| idx) {
        let first = turns.iter().position(|turn| *turn == Some(turn_idx));
        let Some(conversation) = first.and_then(|idx| evidence.conversations.get(idx)) else { continue };
        let texts: Vec<&str> = conversation.user_texts().collect();
        let forgotten: Vec<&str> = scenario.turns[..turn_idx]
            .iter()
            .map(|earlier| earlier.prompt.as_str())
            .filter(|prompt| !texts.iter().any(|text| text.contains(prompt)))
            .collect();
        if !forgotten.is_empty() {
            let n = turn_idx + 1;
            let list = forgotten.iter().map(|prompt| Value::from(*prompt).to_string()).collect::<Vec<_>>();
            problems.push(Violation::in_turn(
                n,
                format!(
                    "turn {n}, after session/resume: its first Provider request (request {}) carries no earlier \
                     prompt {}: the resumed Session lost its conversation",
                    first.map_or(0, |idx| idx + 1),
                    list.join(", ")
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, capture, check, check_played, entry, scenario, user};
    use serde_json::json;

    const RESUMED: &str = "title = \"t\"\n[[turn]]\nprompt = \"Remember 7\"\nrespond = [{ text = [\"Noted.\"] }]\n\
        [[turn]]\nprompt = \"What was it?\"\nresume = true\nrespond = [{ text = [\"7.\"] }]\n";

    fn requests(second: Vec<Value>) -> crate::capture::Capture {
        let mut capture = capture(&[], &[body(vec![user("Remember 7")]), body(second)]);
        capture.log.clear();
        for (request, turn) in capture.requests.iter_mut().zip([0, 1]) {
            request.turn = Some(turn);
        }
        capture
    }

    #[test]
    fn a_resumed_turn_that_carries_the_earlier_prompts_passes() {
        let capture = requests(vec![user("Remember 7"), user("What was it?")]);
        assert!(check_played(INVARIANT, &capture, &scenario(RESUMED)).is_empty());
    }

    #[test]
    fn a_resumed_turn_sent_without_the_conversation_is_caught() {
        let capture = requests(vec![user("What was it?")]);
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(RESUMED)),
            ["turn 2, after session/resume: its first Provider request (request 2) carries no earlier prompt \
                 \"Remember 7\": the resumed Session lost its conversation"]
        );
    }

    #[test]
    fn a_refused_resume_is_caught() {
        let acp = vec![
            entry(
                "client",
                json!({"jsonrpc": "2.0", "id": 4, "method": "session/resume", "params": {"sessionId": "s"}}),
            ),
            entry("agent", json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "no"}})),
        ];
        let capture = crate::capture::Capture { acp, ..crate::capture::Capture::default() };
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "session/resume of Session `s`, which the agent served, was refused ({\"code\":-32601,\"message\":\"no\"}): \
                 the conversation could not go on"
            ]
        );
    }
}
