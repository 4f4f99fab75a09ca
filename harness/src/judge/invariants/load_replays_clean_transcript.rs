//! ACP-LOAD-CLEAN: `session/load` replays the clean transcript: a turn of this run that did not
//! complete replays no assistant text at all, so no partial or failure text is ever shown as
//! transcript on load. What a completed turn replays is ACP-LOAD-MATCHES-LIVE's.

use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use super::{Invariant, Scope, chunk_text, exchanges};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LOAD-CLEAN", also: &[], name: "load_replays_clean_transcript", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    if capture.acp.is_empty() || capture.acp_load.is_empty() {
        // Nothing was loaded: the implementation cannot, or the run ended early.
        return Vec::new();
    }
    let live: Vec<_> = exchanges(&capture.acp).into_iter().filter(|exchange| !exchange.busy).collect();
    let replayed = replayed_turns(&capture.acp_load);
    if replayed.len() < live.len() {
        // Turns missing from the replay: ACP-LOAD-MATCHES-LIVE says so; nothing lines up here.
        return Vec::new();
    }
    let driven = evidence.driven_turns(live.len());
    let first_replayed = replayed.len() - live.len();
    let first_audited = evidence.audit.turns.len().saturating_sub(live.len());
    let mut problems = Vec::new();
    for idx in 0..live.len() {
        let n = first_audited + idx + 1;
        let (_, agent) = &replayed[first_replayed + idx];
        let status = driven.get(idx).and_then(|turn| turn.status);
        if status != Some(TerminalStatus::Completed) && !agent.is_empty() {
            problems.push(format!(
                "turn {n} ({}): load replayed assistant text {agent:?}, expected none",
                status.map_or("no terminal state", |status| status.as_str())
            ));
        }
    }
    problems
}

/// The replay split into user turns: `(user text, assistant text)`.
pub(super) fn replayed_turns(transcript: &[Value]) -> Vec<(String, String)> {
    let mut turns: Vec<(String, String)> = Vec::new();
    for update in transcript.iter().filter_map(|entry| entry.pointer("/message/params/update")) {
        if let Some(text) = chunk_text(update, "user_message_chunk") {
            turns.push((text.to_owned(), String::new()));
        } else if let Some(text) = chunk_text(update, "agent_message_chunk")
            && let Some((_, agent)) = turns.last_mut()
        {
            agent.push_str(text);
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Capture, Reported};
    use crate::judge::invariants::fixture::{capture, check, chunk, entry, prompt};
    use serde_json::json;

    fn partial_failed(load_chunks: &[&str]) -> Capture {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "Summarise"})),
                ("assistant_message", json!({"text": "Useful", "metadata": {"partial": true}})),
                ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ],
            &[],
        );
        capture.reported.push(Reported { stop_reason: None, error: Some(json!({})) });
        capture.acp = vec![
            entry("client", prompt(1, "Summarise")),
            entry("agent", chunk("agent_message_chunk", "Useful")),
            entry("agent", json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}})),
        ];
        capture.acp_load = std::iter::once(entry("agent", chunk("user_message_chunk", "Summarise")))
            .chain(load_chunks.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))))
            .collect();
        capture
    }

    #[test]
    fn partial_text_replayed_on_load_is_caught() {
        assert_eq!(
            check(INVARIANT, &partial_failed(&["Useful"])),
            ["turn 1 (partial_failed): load replayed assistant text \"Useful\", expected none"]
        );
    }

    #[test]
    fn a_clean_load_passes() {
        assert!(check(INVARIANT, &partial_failed(&[])).is_empty());
    }
}
