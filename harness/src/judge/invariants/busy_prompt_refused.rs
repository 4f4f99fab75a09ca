//! ACP-ONE-TURN: one Turn at a time per Session. A `session/prompt` sent while another is still
//! running in the same Session is refused with -32602 (invalid params), and the running prompt
//! still gets its own answer.

use serde_json::Value;

use super::{Invariant, Scope, exchanges};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-ONE-TURN", also: &[], name: "busy_prompt_refused", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for (idx, exchange) in exchanges(&evidence.capture.acp).iter().enumerate() {
        let n = idx + 1;
        let code = exchange.answer.and_then(|answer| answer.pointer("/error/code")).and_then(Value::as_i64);
        match (exchange.busy, exchange.answer, code) {
            (_, None, _) => problems.push(format!("prompt {n} ({:?}) was never answered", exchange.text)),
            (true, Some(_), Some(-32602)) => {}
            (true, Some(answer), _) => {
                problems.push(format!("prompt {n} was sent while another ran but answered {answer}"))
            }
            (false, Some(_), _) => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{check, entry, prompt};
    use serde_json::json;

    #[test]
    fn a_second_turn_accepted_while_one_runs_is_caught() {
        let capture = Capture {
            acp: vec![
                entry("client", prompt(1, "first")),
                entry("client", prompt(2, "second")),
                entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
                entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
            ],
            ..Capture::default()
        };
        let problems = check(INVARIANT, &capture);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("prompt 2 was sent while another ran but answered"), "{problems:?}");
    }
}
