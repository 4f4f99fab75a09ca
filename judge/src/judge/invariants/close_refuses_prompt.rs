//! ACP-CLOSE-REFUSES-PROMPT: `session/close` ends a Session: the agent answers the close with a
//! result, and a `session/prompt` the client then sends to the closed Session on the same
//! connection is answered with an error, never run as a turn (ACP "Closing Active Sessions":
//! "The Agent MUST cancel any ongoing work for that session as if `session/cancel` had been
//! called, then free the resources associated with the session"; the schema's
//! `session_not_found` error is for a Session that "does not exist or is not active". That a
//! freed Session refuses prompts is gauntlet's reading).

use crate::judge::evidence::Evidence;
use crate::judge::transcript::describe;
use crate::judge::transcript::{answer_to, sent};
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-CLOSE-REFUSES-PROMPT", also: &[], name: "close_refuses_prompt", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let transcript = &evidence.capture.acp;
    let prompts = sent(transcript, "session/prompt");
    let mut problems = Vec::new();
    for close in sent(transcript, "session/close") {
        let session_id = close.session_id().unwrap_or_default();
        match answer_to(transcript, &close) {
            None => {
                problems.push(Violation::new(format!("session/close of Session `{session_id}` was never answered")));
                continue;
            }
            Some((_, answer)) if answer.get("result").is_none() => {
                let error = answer.get("error").map(ToString::to_string).unwrap_or_default();
                problems.push(Violation::new(format!(
                    "session/close of Session `{session_id}` was refused ({error}), by an agent that advertises \
                     `sessionCapabilities.close`"
                )));
                continue;
            }
            Some(_) => {}
        }
        // The prompts to it after the close, until the next connection.
        let next_connection = sent(transcript, "initialize").into_iter().map(|sent| sent.at).find(|at| *at > close.at);
        let later = prompts.iter().filter(|prompt| {
            prompt.at > close.at
                && next_connection.is_none_or(|at| prompt.at < at)
                && prompt.session_id() == Some(session_id)
        });
        for prompt in later {
            let said = match answer_to(transcript, prompt) {
                Some((_, answer)) if answer.get("error").is_some() => continue,
                Some((_, answer)) => {
                    format!(
                        "was answered {}",
                        describe(answer.pointer("/result/stopReason").and_then(|v| v.as_str()), None)
                    )
                }
                None => "was never answered".to_owned(),
            };
            problems.push(Violation::new(format!(
                "a session/prompt to Session `{session_id}` after it was closed {said}: a closed Session takes no prompt"
            )));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry, prompt};
    use serde_json::{Value, json};

    fn closed(close_answer: Value, prompt_answer: Option<Value>) -> Capture {
        let mut acp = vec![
            entry(
                "client",
                json!({"jsonrpc": "2.0", "id": 5, "method": "session/close", "params": {"sessionId": "s"}}),
            ),
            entry("agent", close_answer),
            entry("client", prompt(6, "(a prompt to the closed session)")),
        ];
        acp.extend(prompt_answer.map(|answer| entry("agent", answer)));
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn a_prompt_to_a_closed_session_refused_passes() {
        let refused = json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32002, "message": "Resource not found"}});
        assert!(check(INVARIANT, &closed(json!({"jsonrpc": "2.0", "id": 5, "result": {}}), Some(refused))).is_empty());
    }

    #[test]
    fn a_prompt_a_closed_session_still_runs_is_caught() {
        let ran = json!({"jsonrpc": "2.0", "id": 6, "result": {"stopReason": "end_turn"}});
        assert_eq!(
            check(INVARIANT, &closed(json!({"jsonrpc": "2.0", "id": 5, "result": {}}), Some(ran))),
            ["a session/prompt to Session `s` after it was closed was answered with stop reason `end_turn`: a closed \
                 Session takes no prompt"]
        );
        assert_eq!(
            check(INVARIANT, &closed(json!({"jsonrpc": "2.0", "id": 5, "result": {}}), None)),
            [
                "a session/prompt to Session `s` after it was closed was never answered: a closed Session takes no prompt"
            ]
        );
    }

    #[test]
    fn a_refused_close_is_caught() {
        let refused = json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "no"}});
        let found = check(INVARIANT, &closed(refused, None));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("session/close of Session `s` was refused"), "{found:?}");
    }
}
