//! ACP-ONE-TURN: every `session/prompt` gets its own answer (JSON-RPC 2.0: every request is
//! answered). ACP does not say a busy prompt must be refused; that the reference refuses it
//! with -32602 is ACP-BUSY-REFUSED, a MAY.
//!
//! Also ACP-BUSY-AFTER-RUNNING (a SHOULD, [`AFTER_RUNNING`]): a prompt sent while another runs
//! in the same Session is not answered before the running one: refused with an error, or run as
//! a turn of its own and answered after the running prompt, which the agent may also supersede
//! (answer it `cancelled`, then run the new one: ACP leaves that open). ACP lets a client send
//! a prompt only once the last completed, so what an agent does with one sent earlier is
//! gauntlet's reading.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-ONE-TURN",
    also: &[],
    name: "prompts_answered",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// ACP-BUSY-AFTER-RUNNING, from the same reading of the prompts.
pub const AFTER_RUNNING: Invariant = Invariant {
    id: "ACP-BUSY-AFTER-RUNNING",
    also: &[],
    name: "prompts_answered",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(after_running(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    evidence
        .exchanges()
        .iter()
        .enumerate()
        .filter(|(_, exchange)| exchange.answer.is_none())
        .map(|(idx, exchange)| format!("prompt {} ({:?}) was never answered", idx + 1, exchange.text))
        .collect()
}

fn after_running(evidence: &Evidence) -> Vec<String> {
    let exchanges = evidence.exchanges();
    let mut problems = Vec::new();
    for (idx, exchange) in exchanges.iter().enumerate() {
        let Some(answer) = exchange.answer else { continue };
        if !exchange.busy || answer.get("error").is_some() {
            continue;
        }
        // Run as a turn of its own: after the prompt that was running when it came (which the
        // agent may have given up for it, answered `cancelled`: how that turn ended is read from
        // the wire, `Evidence::driven_turns`).
        let Some(at) = exchanges[..idx].iter().rposition(|earlier| !earlier.busy) else { continue };
        let running = &exchanges[at];
        if running.answered_at.is_none_or(|at| exchange.answered_at.is_some_and(|own| own < at)) {
            problems.push(format!(
                "prompt {} ({:?}), sent while prompt {:?} ran, was answered before it: {answer}",
                idx + 1,
                exchange.text,
                running.text
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry, prompt};
    use serde_json::json;

    fn answer(id: u64) -> serde_json::Value {
        entry("agent", json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}}))
    }

    /// Refused or queued, a busy prompt gets its own answer; answered before the running one,
    /// it took the running turn's place, and never answered, it is lost.
    #[test]
    fn a_busy_prompt_refused_or_queued_passes_answered_first_or_never_does_not() {
        let refused = entry("agent", json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "busy"}}));
        let transcript = |tail: Vec<serde_json::Value>| {
            let mut acp = vec![entry("client", prompt(1, "first")), entry("client", prompt(2, "second"))];
            acp.extend(tail);
            Capture { acp, ..Capture::default() }
        };
        assert!(check(INVARIANT, &transcript(vec![refused.clone(), answer(1)])).is_empty());
        assert!(check(AFTER_RUNNING, &transcript(vec![refused, answer(1)])).is_empty());
        assert!(check(AFTER_RUNNING, &transcript(vec![answer(1), answer(2)])).is_empty());
        assert!(check(INVARIANT, &transcript(vec![answer(2), answer(1)])).is_empty());
        let first = check(AFTER_RUNNING, &transcript(vec![answer(2), answer(1)]));
        assert_eq!(first.len(), 1);
        assert!(
            first[0].starts_with("prompt 2 (\"second\"), sent while prompt \"first\" ran, was answered before it"),
            "{first:?}"
        );
        assert_eq!(check(INVARIANT, &transcript(vec![answer(1)])), ["prompt 2 (\"second\") was never answered"]);
        // Superseded: the running prompt answered `cancelled`, then the new one run (issue 31).
        let cancelled = entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "cancelled"}}));
        assert!(check(AFTER_RUNNING, &transcript(vec![cancelled, answer(2)])).is_empty());
    }
}
