//! ACP-BUSY-REFUSED (MAY): the reference refuses a `session/prompt` sent while another runs in
//! the same Session with -32602 (invalid params), as Pixir does (pixir.md 5). ACP leaves it to
//! the agent: another may queue the prompt as a turn of its own; that each prompt still gets
//! its own answer is ACP-ONE-TURN.

use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-BUSY-REFUSED",
    also: &[],
    name: "busy_prompt_refused",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    evidence
        .exchanges()
        .iter()
        .enumerate()
        .filter(|(_, exchange)| exchange.busy)
        .filter_map(|(idx, exchange)| {
            let answer = exchange.answer?;
            let code = answer.pointer("/error/code").and_then(Value::as_i64);
            (code != Some(-32602)).then(|| {
                format!("prompt {} was sent while another ran and answered {answer}, not refused with -32602", idx + 1)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, entry, prompt};
    use serde_json::json;

    #[test]
    fn a_busy_prompt_not_refused_with_invalid_params_differs() {
        let capture = Capture {
            acp: vec![
                entry("client", prompt(1, "first")),
                entry("client", prompt(2, "second")),
                entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
                entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
            ],
            ..Capture::default()
        };
        let problems = check(INVARIANT, &capture);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].ends_with("not refused with -32602"), "{problems:?}");
    }
}
