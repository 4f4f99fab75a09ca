//! ACP-LOAD-MATCHES-LIVE: `session/load` replays, turn by turn, what the client was shown live.
//! Every live turn is replayed, with its prompt as the user text; a completed turn replays the
//! assistant text the client saw during its prompt (or, where a failed attempt showed text
//! first, just the answer that ended it: that duplication is WIRE-TEXT-ONCE's to judge); a turn
//! that did not complete replays none (ACP-LOAD-CLEAN says why).

use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use super::load_replays_clean_transcript::replayed_turns;
use super::{Invariant, Scope, exchanges, shown_text, streamed_per_turn};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LOAD-MATCHES-LIVE", also: &[], name: "load_matches_live", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    if capture.acp.is_empty() || capture.acp_load.is_empty() {
        // Nothing was loaded: the implementation cannot, or the run ended early.
        return Vec::new();
    }
    // A reload mid-conversation is in the live transcript, the final replay in its own.
    if let Some(refusal) = load_refusal(&capture.acp).or_else(|| load_refusal(&capture.acp_load)) {
        let advertised = capture.acp.iter().chain(&capture.acp_load).any(|entry| {
            entry.pointer("/message/result/agentCapabilities/loadSession").and_then(Value::as_bool) == Some(true)
        });
        let claim = if advertised {
            "an agent that advertises `loadSession`"
        } else {
            "an agent whose profile declares `load`"
        };
        return vec![format!(
            "session/load of the Session it had just served was refused, by {claim}, so nothing of the conversation was replayed: {refusal}"
        )];
    }
    // A busy prompt the agent ran as a turn of its own is a turn of the Session; one it refused
    // is not.
    let ran = |exchange: &super::Exchange| {
        !exchange.busy || exchange.answer.is_some_and(|answer| answer.get("result").is_some())
    };
    let (live, merged): (Vec<_>, Vec<_>) = exchanges(&capture.acp).into_iter().partition(ran);
    // A busy prompt the agent took into the running turn instead (it never answered it, which
    // ACP-ONE-TURN judges) is replayed inside that turn: its text is not a turn of its own.
    let mut replayed: Vec<(String, String)> = Vec::new();
    for (user, agent) in replayed_turns(&capture.acp_load) {
        match replayed.last_mut() {
            Some((_, previous)) if merged.iter().any(|exchange| exchange.text == user) => previous.push_str(&agent),
            _ => replayed.push((user, agent)),
        }
    }
    if replayed.len() < live.len() {
        let users: Vec<&str> = replayed.iter().map(|(user, _)| user.as_str()).collect();
        let prompts: Vec<&str> = live.iter().map(|exchange| exchange.text.as_str()).collect();
        return vec![format!(
            "load replayed {} user turns {users:?}, the live session had {} {prompts:?}",
            replayed.len(),
            live.len()
        )];
    }
    let driven = evidence.driven_turns(live.len());
    // The answers the script streamed, by scenario turn (the last turns of the transcript).
    let streamed = streamed_per_turn(evidence);
    let first_scenario = live.len().saturating_sub(streamed.len());
    let first_replayed = replayed.len() - live.len();
    let first_audited = evidence.audit.turns.len().saturating_sub(live.len());
    let mut problems = Vec::new();
    for (idx, exchange) in live.iter().enumerate() {
        let n = first_audited + idx + 1;
        let (user, agent) = &replayed[first_replayed + idx];
        if *user != exchange.text {
            problems
                .push(format!("turn {n}: load replayed the user text {user:?}, the prompt was {:?}", exchange.text));
        }
        if driven.get(idx).and_then(|turn| turn.status) != Some(TerminalStatus::Completed) {
            continue;
        }
        let shown = shown_text(exchange);
        let answer = idx
            .checked_sub(first_scenario)
            .and_then(|turn| streamed.get(turn))
            .and_then(|pieces| pieces.iter().rfind(|piece| piece.clean))
            .map(|piece| piece.text.as_str())
            .filter(|answer| !answer.is_empty() && shown.ends_with(answer));
        if *agent != shown && Some(agent.as_str()) != answer {
            problems.push(format!(
                "turn {n} (completed): load replayed assistant text {agent:?}, the client was shown {shown:?} live"
            ));
        }
    }
    problems
}

/// The agent's error answering the client's `session/load`, if it refused it.
fn load_refusal(transcript: &[Value]) -> Option<&Value> {
    let request = transcript.iter().find(|entry| {
        entry["from"] == "client" && entry.pointer("/message/method").and_then(Value::as_str) == Some("session/load")
    })?;
    let id = request.pointer("/message/id")?;
    transcript
        .iter()
        .filter(|entry| entry["from"] == "agent")
        .find(|entry| entry.pointer("/message/id") == Some(id) && entry.pointer("/message/method").is_none())?
        .pointer("/message/error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{check, chunk, entry, prompt};
    use serde_json::json;

    fn two_turns(replay: &[(&str, &[&str])]) -> Capture {
        let mut acp = Vec::new();
        for (id, (text, answer)) in [(1, ("Name a prime.", "Seven.")), (2, ("Another one?", "Eleven."))] {
            acp.push(entry("client", prompt(id, text)));
            acp.push(entry("agent", chunk("agent_message_chunk", answer)));
            acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}})));
        }
        let mut acp_load = Vec::new();
        for (user, agent) in replay {
            acp_load.push(entry("agent", chunk("user_message_chunk", user)));
            acp_load.extend(agent.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))));
        }
        let reported = vec![crate::capture::Reported { stop_reason: Some("end_turn".into()), error: None }; 2];
        // A Log of two completed turns, for the terminal states.
        let mut capture = crate::judge::invariants::fixture::capture(
            &[
                ("user_message", json!({"text": "Name a prime."})),
                ("assistant_message", json!({"text": "Seven."})),
                ("user_message", json!({"text": "Another one?"})),
                ("assistant_message", json!({"text": "Eleven."})),
            ],
            &[],
        );
        capture.acp = acp;
        capture.acp_load = acp_load;
        capture.reported = reported;
        capture
    }

    #[test]
    fn a_replay_of_what_was_shown_passes() {
        let capture = two_turns(&[("Name a prime.", &["Sev", "en."]), ("Another one?", &["Eleven."])]);
        assert!(check(INVARIANT, &capture).is_empty());
    }

    #[test]
    fn answers_replayed_one_turn_late_are_caught() {
        let capture = two_turns(&[("Name a prime.", &[]), ("Another one?", &["Seven."])]);
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn 1 (completed): load replayed assistant text \"\", the client was shown \"Seven.\" live",
                "turn 2 (completed): load replayed assistant text \"Seven.\", the client was shown \"Eleven.\" live",
            ]
        );
    }

    #[test]
    fn a_turn_missing_from_the_replay_is_caught() {
        let capture = two_turns(&[("Another one?", &["Eleven."])]);
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "load replayed 1 user turns [\"Another one?\"], the live session had 2 [\"Name a prime.\", \"Another one?\"]"
            ]
        );
    }

    /// gemini-cli advertises `loadSession`, then refuses to load the Session it has just
    /// served: one finding quoting its answer, not an `error` verdict for the whole run.
    #[test]
    fn a_refused_load_is_one_finding_quoting_the_answer() {
        let mut capture = two_turns(&[("Name a prime.", &["Seven."]), ("Another one?", &["Eleven."])]);
        capture.acp_load = vec![
            entry("client", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})),
            entry("agent", json!({"jsonrpc": "2.0", "id": 0, "result": {"agentCapabilities": {"loadSession": true}}})),
            entry("client", json!({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {"sessionId": "s"}})),
            entry(
                "agent",
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "No previous sessions found for this project."}}),
            ),
        ];
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "session/load of the Session it had just served was refused, by an agent that advertises `loadSession`, so nothing of the conversation was replayed: {\"code\":-32603,\"message\":\"No previous sessions found for this project.\"}"
            ]
        );
    }
}
