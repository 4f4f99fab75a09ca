//! TURN-RESTART-RECOVERY: no Turn is left open behind another. Every Turn but the Log's last
//! (which may still be running) has terminal evidence: a Turn a crash cut short is closed when
//! its Session resumes, before the next prompt, so the model never gets two user messages in
//! a row and no reader takes the open Turn for anything.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-RESTART-RECOVERY",
    also: &["TURN-TERMINAL-EVIDENCE"],
    name: "turns_terminated",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let turns = &evidence.audit.turns;
    let Some((_, earlier)) = turns.split_last() else { return Vec::new() };
    earlier
        .iter()
        .filter(|turn| turn.terminal_status.is_none())
        .map(|turn| {
            format!(
                "turn at seq {} has no terminal evidence, yet a later turn started: a Turn a crash left \
                 open must be closed (`turn_failed`, `interrupted`) when its Session resumes",
                turn.user_seq
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn an_open_turn_behind_a_later_one_is_caught_an_open_last_one_is_not() {
        let user = ("user_message", json!({"text": "q"}));
        let call = ("tool_call", json!({"call_id": "c", "name": "read", "args": {}}));
        let answer = ("assistant_message", json!({"text": "a"}));
        assert!(check(INVARIANT, &capture(&[user.clone(), call.clone()], &[])).is_empty());
        let problems = check(INVARIANT, &capture(&[user.clone(), call.clone(), user.clone(), answer.clone()], &[]));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("turn at seq 0 has no terminal evidence"), "{problems:?}");
        let closed = ("turn_failed", json!({"terminal_status": "interrupted", "error_kind": "restarted"}));
        assert!(check(INVARIANT, &capture(&[user.clone(), call, closed, user, answer], &[])).is_empty());
    }
}
