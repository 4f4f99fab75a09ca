//! ACP-LIST-SERVED: `session/list` filtered by the workspace lists the Session the agent
//! served there (ACP "Session List": the method "allows Clients to discover sessions known to
//! an Agent"; that a Session the agent just served is one it knows is gauntlet's reading).
//! ACP-LIST-CWD: every Session it lists has that `cwd` ("Only sessions with a matching `cwd`
//! are returned").

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::transcript::{answer_to, sent, served_sessions};
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LIST-SERVED", also: &["ACP-LIST-CWD"], name: "session_listed", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let transcript = &evidence.capture.acp;
    let mut problems = Vec::new();
    for list in sent(transcript, "session/list") {
        let Some(cwd) = list.message.pointer("/params/cwd").and_then(Value::as_str) else { continue };
        // The Sessions served in that workspace before the list was asked.
        let served: Vec<&str> = served_sessions(&transcript[..list.at]);
        let answer = match answer_to(transcript, &list) {
            None => {
                problems.push(Violation::new(format!("session/list (cwd {cwd}) was never answered")));
                continue;
            }
            Some((_, answer)) => answer,
        };
        let Some(sessions) = answer.pointer("/result/sessions").and_then(Value::as_array) else {
            let error = answer.get("error").map(ToString::to_string).unwrap_or_else(|| answer.to_string());
            problems.push(Violation::new(format!(
                "session/list (cwd {cwd}) was refused ({error}), by an agent that advertises `sessionCapabilities.list`"
            )));
            continue;
        };
        let listed: Vec<&str> =
            sessions.iter().filter_map(|info| info.get("sessionId").and_then(Value::as_str)).collect();
        for session_id in served.iter().filter(|session_id| !listed.contains(session_id)) {
            problems.push(Violation::new(format!(
                "session/list (cwd {cwd}) does not list Session `{session_id}`, which the agent served in that \
                 workspace; it listed {listed:?}"
            )));
        }
        for info in sessions {
            let listed_cwd = info.get("cwd").and_then(Value::as_str).unwrap_or_default();
            if listed_cwd != cwd {
                let session_id = info.get("sessionId").and_then(Value::as_str).unwrap_or_default();
                problems.push(
                    Violation::new(format!(
                        "session/list (cwd {cwd}) lists Session `{session_id}` of another cwd, {listed_cwd:?}: only \
                         Sessions with a matching cwd are returned"
                    ))
                    .of("ACP-LIST-CWD"),
                );
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, check_as, entry};
    use serde_json::json;

    fn listed(sessions: Value) -> Capture {
        let acp = vec![
            entry("client", json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}})),
            entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "root"}})),
            entry("client", json!({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {"cwd": "/w"}})),
            entry("agent", json!({"jsonrpc": "2.0", "id": 5, "result": {"sessions": sessions}})),
        ];
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn a_list_with_the_served_session_passes() {
        assert!(check(INVARIANT, &listed(json!([{"sessionId": "root", "cwd": "/w"}]))).is_empty());
    }

    #[test]
    fn a_list_that_forgets_the_served_session_is_caught() {
        assert_eq!(
            check(INVARIANT, &listed(json!([]))),
            [
                "session/list (cwd /w) does not list Session `root`, which the agent served in that workspace; it listed []"
            ]
        );
    }

    #[test]
    fn a_session_of_another_cwd_is_caught() {
        let sessions = json!([{"sessionId": "root", "cwd": "/w"}, {"sessionId": "x", "cwd": "/elsewhere"}]);
        assert_eq!(
            check_as(INVARIANT, "ACP-LIST-CWD", &listed(sessions)),
            ["session/list (cwd /w) lists Session `x` of another cwd, \"/elsewhere\": only Sessions with a matching \
                 cwd are returned"]
        );
    }
}
