//! ACP-RESUME-NO-REPLAY: `session/resume` reattaches a Session without replaying it: between
//! the client's `session/resume` and its answer, the agent sends no `session/update` of that
//! Session (ACP "Resuming Sessions": "Unlike `session/load`, the Agent MUST NOT replay the
//! conversation history via `session/update` notifications before responding").

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::transcript::{answer_to, sent};
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-RESUME-NO-REPLAY", also: &[], name: "resume_no_replay", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let transcript = &evidence.capture.acp;
    let mut problems = Vec::new();
    for (n, resume) in sent(transcript, "session/resume").iter().enumerate() {
        let session_id = resume.session_id().unwrap_or_default();
        let end = answer_to(transcript, resume).map_or(transcript.len(), |(at, _)| at);
        let replayed: Vec<&str> = transcript[resume.at + 1..end]
            .iter()
            .filter(|entry| entry.get("from").and_then(Value::as_str) == Some("agent"))
            .filter_map(|entry| entry.get("message"))
            .filter(|message| message.get("method").and_then(Value::as_str) == Some("session/update"))
            .filter(|message| message.pointer("/params/sessionId").and_then(Value::as_str) == Some(session_id))
            .map(|message| message.pointer("/params/update/sessionUpdate").and_then(Value::as_str).unwrap_or("?"))
            .collect();
        if !replayed.is_empty() {
            problems.push(Violation::new(format!(
                "session/resume {} of Session `{session_id}` replayed {} update(s) before its answer ({}): a resume \
                 reattaches without a replay",
                n + 1,
                replayed.len(),
                replayed.join(", ")
            )));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, chunk, entry};
    use serde_json::json;

    fn resumed(updates: Vec<Value>) -> Capture {
        let mut acp = vec![
            entry("client", json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})),
            entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
            entry(
                "client",
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/resume",
                    "params": {"sessionId": "s", "cwd": "/w", "mcpServers": []}}),
            ),
        ];
        acp.extend(updates.into_iter().map(|update| entry("agent", update)));
        acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {}})));
        acp.push(entry("agent", chunk("agent_message_chunk", "a later turn's text")));
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn a_resume_answered_without_updates_passes() {
        assert!(check(INVARIANT, &resumed(vec![])).is_empty());
    }

    #[test]
    fn a_resume_that_replays_the_conversation_is_caught() {
        let capture = resumed(vec![chunk("user_message_chunk", "q"), chunk("agent_message_chunk", "a")]);
        assert_eq!(
            check(INVARIANT, &capture),
            ["session/resume 1 of Session `s` replayed 2 update(s) before its answer (user_message_chunk, \
                 agent_message_chunk): a resume reattaches without a replay"]
        );
    }
}
