//! TURN-TERMINAL-EVIDENCE: every turn ends with exactly one terminal state that the Log alone
//! supports, and what the implementation reported agrees with it.
//!
//! Only turns driven in this run must have evidence: a preloaded Log may hold a turn that a
//! crash cut short, and the auditor shows that one as having none.

use super::Invariant;
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "TURN-TERMINAL-EVIDENCE", also: &[], name: "terminal_evidence", check };

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let turns = &evidence.audit.turns;
    // Reported outcomes belong to the last turns: earlier ones may come from a preloaded Log.
    let reported = &evidence.capture.reported;
    let offset = turns.len().saturating_sub(reported.len());
    for (idx, turn) in turns.iter().enumerate() {
        let range_end = turns.get(idx + 1).map_or(u64::MAX, |next| next.user_seq);
        let n_failed = evidence
            .lines
            .iter()
            .filter(|line| {
                line.kind == "turn_failed" && line.seq.is_some_and(|seq| seq > turn.user_seq && seq < range_end)
            })
            .count();
        if n_failed > 1 {
            problems.push(format!("turn at seq {} has {n_failed} turn_failed events", turn.user_seq));
        }
        if turn.terminal_status.is_none() && idx >= offset {
            problems.push(format!("turn at seq {} has no terminal evidence in the Log", turn.user_seq));
        }
    }
    for (idx, report) in reported.iter().enumerate() {
        let logged = turns.get(offset + idx).and_then(|turn| turn.terminal_status);
        let logged = logged.map_or("none", |status| status.as_str());
        if logged != report.terminal_status {
            problems.push(format!(
                "turn {} was reported `{}` but the Log shows `{logged}`",
                offset + idx + 1,
                report.terminal_status
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Reported;
    use crate::judge::invariants::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_completion_reported_over_failure_evidence_is_caught() {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "q"})),
                ("turn_failed", json!({"terminal_status": "failed", "error_kind": "network"})),
            ],
            &[],
        );
        capture.reported.push(Reported {
            terminal_status: "completed".into(),
            error_kind: None,
            next_actions: vec![],
            truncation: None,
        });
        assert_eq!(check(INVARIANT, &capture), ["turn 1 was reported `completed` but the Log shows `failed`"]);
    }

    #[test]
    fn a_turn_without_evidence_is_caught() {
        let mut capture = capture(&[("user_message", json!({"text": "q"})), ("provider_usage", json!({}))], &[]);
        assert!(check(INVARIANT, &capture).is_empty(), "a preloaded turn may lack evidence");
        capture.reported.push(Reported {
            terminal_status: "failed".into(),
            error_kind: None,
            next_actions: vec![],
            truncation: None,
        });
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "turn at seq 0 has no terminal evidence in the Log",
                "turn 1 was reported `failed` but the Log shows `none`"
            ]
        );
    }
}
