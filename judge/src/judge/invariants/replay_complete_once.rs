//! ACP-REPLAY-COMPLETE: in ACP v2, each `session/resume` with a `replayFrom` cursor that is
//! answered with success is preceded by exactly one `replay_complete` of its Session, after
//! every replayed update; a resume without one gets none. The schema (`ReplayComplete`): "The
//! Agent MUST send this exactly once on a session for each `session/resume` request with a
//! `replayFrom` cursor, after the last replayed update for that session and before the response,
//! even for an empty replay", and "The Agent MUST NOT send it when `replayFrom` is omitted or
//! `null`". What follows the marker before the answer is no replayed history ("Every update for
//! the session between the `session/resume` request and this update is replayed history. Every
//! update after it is not"): the state snapshot a resume owes may come there, a message, a tool
//! call or a plan may not.
//!
//! Read on both transcripts as the agent sent them (v1 has no `replay_complete`), each v2
//! connection alone.

use std::collections::HashMap;

use serde_json::Value;

use crate::judge::transcript::{Connection, connections, update_of};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::on_each_raw_transcript;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-REPLAY-COMPLETE",
    also: &[],
    name: "replay_complete_once",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(on_each_raw_transcript(evidence, transcript)),
};

/// Updates that are history: once a replay is marked complete, none of these may come before
/// the resume's answer.
const HISTORY: [&str; 10] = [
    "user_message", // ACP's update kind, not a Log type
    "user_message_chunk",
    "agent_message",
    "agent_message_chunk",
    "agent_thought",
    "agent_thought_chunk",
    "tool_call_update",
    "tool_call_content_chunk",
    "plan_update",
    "plan_removed",
];

fn transcript(entries: &[Value], which: &str) -> Vec<String> {
    connections(entries).iter().filter(|connection| connection.v2).flat_map(|c| connection(c, which)).collect()
}

/// A resume waiting for its answer: its Session, whether it asked for a replay, and the
/// `replay_complete`s seen for it so far.
struct Resume<'a> {
    number: usize,
    session_id: &'a str,
    replays: bool,
    marks: usize,
}

fn connection(connection: &Connection, which: &str) -> Vec<String> {
    let mut pending: HashMap<String, Resume> = HashMap::new();
    let mut problems = Vec::new();
    for (number, from, message) in connection.messages() {
        if from == "client" {
            if message.get("method").and_then(Value::as_str) == Some("session/resume")
                && let Some(id) = message.get("id")
            {
                let session_id = message.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default();
                let replays = message.pointer("/params/replayFrom").is_some_and(|from| !from.is_null());
                pending.insert(id.to_string(), Resume { number, session_id, replays, marks: 0 });
            }
            continue;
        }
        if let Some((session_id, kind)) = update_of(message) {
            let resume = pending.values_mut().find(|resume| resume.session_id == session_id);
            problems.extend(updated(resume, number, session_id, kind).map(|problem| format!("{which}: {problem}")));
        } else if message.get("method").is_none()
            && let Some(resume) = message.get("id").and_then(|id| pending.remove(&id.to_string()))
            && resume.replays
            && resume.marks == 0
            && message.get("result").is_some()
        {
            problems.push(format!(
                "{which}: message {number} answers the session/resume of message {} with success, but its replay (replayFrom) was never marked complete: no replay_complete of Session `{}` came before the answer",
                resume.number, resume.session_id
            ));
        }
    }
    problems
}

/// What is wrong with update `kind` of `session_id`, message `number`, given the resume of that
/// Session awaiting its answer, if one does.
fn updated(resume: Option<&mut Resume>, number: usize, session_id: &str, kind: &str) -> Option<String> {
    match (resume, kind) {
        (Some(resume), "replay_complete") if resume.replays => {
            resume.marks += 1;
            (resume.marks > 1).then(|| {
                format!(
                    "message {number} marks the replay of the session/resume of message {} complete a second time: replay_complete comes exactly once per resume",
                    resume.number
                )
            })
        }
        (Some(resume), "replay_complete") => Some(format!(
            "message {number} is a replay_complete for the session/resume of message {}, which asked for no replay (no replayFrom)",
            resume.number
        )),
        (None, "replay_complete") => {
            Some(format!("message {number} is a replay_complete of Session `{session_id}` outside any session/resume"))
        }
        (Some(resume), kind) if resume.marks > 0 && HISTORY.contains(&kind) => Some(format!(
            "message {number} ({kind}) replays history after the replay_complete of the session/resume of message {}: the marker comes after the last replayed update",
            resume.number
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol_schema::v2;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::check;
    use crate::judge::v1_reading::v2_fixture::{connected, request, result, text, update};

    fn complete() -> Value {
        update(v2::SessionUpdate::ReplayComplete(v2::ReplayComplete::new()))
    }

    fn idle() -> Value {
        update(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(v2::IdleStateUpdate::new())))
    }

    fn replayed() -> Value {
        update(v2::SessionUpdate::UserMessage(v2::UserMessage::new("u1").content(vec![text("q")])))
    }

    /// A v2 connection, then a resume of Session `s` (id 2), with a replay or not, the agent's
    /// `updates`, and its answer.
    fn resumed(replay: bool, updates: Vec<Value>) -> Capture {
        let mut resume = v2::ResumeSessionRequest::new("s", "/w");
        if replay {
            resume = resume.replay_from(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
        }
        let mut acp = connected();
        acp.push(request(2, "session/resume", resume));
        acp.extend(updates);
        acp.push(result(2, v2::ResumeSessionResponse::new()));
        Capture { acp, ..Capture::default() }
    }

    #[test]
    fn one_marker_after_the_replay_and_none_without_one_pass() {
        assert!(check(INVARIANT, &resumed(true, vec![replayed(), complete(), idle()])).is_empty());
        assert!(check(INVARIANT, &resumed(true, vec![complete(), idle()])).is_empty(), "an empty replay");
        assert!(check(INVARIANT, &resumed(false, vec![idle()])).is_empty());
    }

    #[test]
    fn a_missing_repeated_misplaced_or_unasked_marker_is_caught() {
        assert_eq!(
            check(INVARIANT, &resumed(true, vec![replayed(), idle()])),
            [
                "the live transcript: message 8 answers the session/resume of message 5 with success, but its replay (replayFrom) was never marked complete: no replay_complete of Session `s` came before the answer"
            ]
        );
        assert_eq!(
            check(INVARIANT, &resumed(true, vec![complete(), complete()])),
            [
                "the live transcript: message 7 marks the replay of the session/resume of message 5 complete a second time: replay_complete comes exactly once per resume"
            ]
        );
        assert_eq!(
            check(INVARIANT, &resumed(true, vec![complete(), replayed()])),
            [
                "the live transcript: message 7 (user_message) replays history after the replay_complete of the session/resume of message 5: the marker comes after the last replayed update"
            ]
        );
        assert_eq!(
            check(INVARIANT, &resumed(false, vec![complete()])),
            [
                "the live transcript: message 6 is a replay_complete for the session/resume of message 5, which asked for no replay (no replayFrom)"
            ]
        );
    }
}
