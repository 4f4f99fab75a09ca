//! WIRE-TEXT-ONCE: text streamed to the client is not shown again by a hidden retry. The text a
//! failed response streamed appears at most once in what the client was shown for its turn,
//! when the turn is then answered as a completion (any stop reason but `cancelled`): seed 000's
//! case is partial text passed off as part of a final answer. A turn answered with an error or
//! `cancelled` shows the failure, repeats and all (issue 31).

use crate::judge::evidence::Evidence;
use crate::judge::transcript::chunk_text;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{request_turns, served};

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-TEXT-ONCE", also: &[], name: "client_text_once", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    // The scenario's turns are the last ones of the transcript (a preloaded Log adds none).
    let first = live.len().saturating_sub(scenario.turns.len());
    let turns = request_turns(evidence);
    let mut problems = Vec::new();
    for (request, turn) in evidence.capture.requests.iter().zip(&turns) {
        let (Some(turn), Some(response)) = (turn, served(evidence, request)) else { continue };
        let partial = response.visible_text();
        let Some(exchange) = live.get(first + turn).filter(|_| response.fails() && !partial.is_empty()) else {
            continue;
        };
        let stop_reason = exchange.answer.and_then(|answer| answer.pointer("/result/stopReason"));
        if stop_reason.is_none_or(|reason| reason == "cancelled") {
            continue;
        }
        let shown: String =
            exchange.updates.iter().filter_map(|update| chunk_text(update, "agent_message_chunk")).collect();
        let times = shown.matches(partial.as_str()).count();
        if times > 1 {
            problems.push(Violation::in_turn(turn + 1, format!(
                "turn {}: the client was shown {partial:?} {times} times (streamed before a failure, then again): {shown:?}",
                turn + 1
            )));
        }
    }
    problems.dedup();
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{body, check_played, chunk, entry, prompt, requests, scenario, user};

    fn shown(chunks: &[&str]) -> Capture {
        let mut acp = vec![entry("client", prompt(1, "Summarise"))];
        acp.extend(chunks.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))));
        acp.push(entry("agent", serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})));
        Capture {
            acp,
            requests: requests(vec![body(vec![user("Summarise")]), body(vec![user("Summarise")])]),
            ..Capture::default()
        }
    }

    const RETRIED: &str = "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nrespond = [{ text = [\"Useful \", \"partial\"], then = { error = \"server_error\" } }, { text = [\"Useful partial answer\"] }]\n";

    #[test]
    fn partial_text_repeated_by_a_retry_is_caught() {
        let capture = shown(&["Useful ", "partial", "Useful partial answer"]);
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(RETRIED)),
            [
                "turn 1: the client was shown \"Useful partial\" 2 times (streamed before a failure, then again): \"Useful partialUseful partial answer\""
            ]
        );
    }

    #[test]
    fn text_shown_once_passes() {
        assert!(check_played(INVARIANT, &shown(&["Useful ", "partial"]), &scenario(RETRIED)).is_empty());
    }
}
