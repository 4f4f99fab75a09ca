//! TURN-TERMINAL-EVIDENCE: every turn ends with exactly one terminal state that the Log alone
//! supports.
//!
//! Only turns driven in this run must have evidence here: a preloaded turn that a crash cut
//! short is TURN-RESTART-RECOVERY's (`turns_terminated`). Whether the agent's answer agrees
//! with the evidence is ACP-STOP-REASON (`stop_reason_matches_log`).

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use gauntlet_agent::EventType;

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-TERMINAL-EVIDENCE",
    also: &[],
    name: "terminal_evidence",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let turns = &evidence.audit.turns;
    let first_driven = evidence.first_driven_turn();
    // The `turn_failed` events of each turn, counted in one pass: a turn holds the seqs after
    // its `user_message` and before the next turn's (turns are in seq order; a Log whose seqs
    // are not is LOG-SEQ-MONOTONIC's).
    let mut n_failed = vec![0usize; turns.len()];
    for seq in evidence.lines.iter().filter(|line| line.kind == EventType::TurnFailed).filter_map(|line| line.seq) {
        let after = turns.partition_point(|turn| turn.user_seq < seq);
        if turns.get(after).is_some_and(|next| next.user_seq == seq) {
            continue;
        }
        if let Some(count) = after.checked_sub(1).and_then(|idx| n_failed.get_mut(idx)) {
            *count += 1;
        }
    }
    for (idx, turn) in turns.iter().enumerate() {
        let n_failed = n_failed[idx];
        if n_failed > 1 {
            problems.push(format!("turn at seq {} has {n_failed} turn_failed events", turn.user_seq));
        }
        if turn.terminal_status.is_none() && idx >= first_driven {
            problems.push(format!("turn at seq {} has no terminal evidence in the Log", turn.user_seq));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_driven_turn_without_evidence_is_caught_a_preloaded_one_is_not() {
        let mut capture = capture(&[("user_message", json!({"text": "q"})), ("provider_usage", json!({}))], &[]);
        assert!(check(INVARIANT, &capture).is_empty(), "a preloaded turn may lack evidence");
        capture.reported.push(Reported { stop_reason: None, error: Some(json!({"code": -32603})) });
        assert_eq!(check(INVARIANT, &capture), ["turn at seq 0 has no terminal evidence in the Log"]);
    }

    #[test]
    fn two_turn_failed_in_one_turn_are_caught() {
        let failed = json!({"terminal_status": "failed"});
        let capture =
            capture(&[("user_message", json!({})), ("turn_failed", failed.clone()), ("turn_failed", failed)], &[]);
        assert_eq!(check(INVARIANT, &capture), ["turn at seq 0 has 2 turn_failed events"]);
    }
}
