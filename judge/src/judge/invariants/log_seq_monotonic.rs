//! LOG-SEQ-MONOTONIC: each canonical Event's `seq` is above the one before it in its Log,
//! resumes included (seed 004: canonical events "are stamped with a per-Session monotonic
//! seq"). Starting at 0 and growing by exactly one is the reference's (Pixir's) own choice,
//! LOG-SEQ-GAPLESS.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-SEQ-MONOTONIC",
    also: &[],
    name: "log_seq_monotonic",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut previous: Option<u64> = None;
    for (index, line) in evidence.lines.iter().enumerate() {
        let Some(seq) = line.seq else {
            return vec![format!("log line {} has no seq", index + 1)];
        };
        if let Some(before) = previous.filter(|before| seq <= *before) {
            return vec![format!("log line {} has seq {seq}, not above the line before it ({before})", index + 1)];
        }
        previous = Some(seq);
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn a_gap_passes_a_repeat_does_not() {
        let mut capture = capture(&[("user_message", json!({})), ("user_message", json!({}))], &[]);
        capture.log[1] = capture.log[1].replace("\"seq\":1", "\"seq\":5");
        assert!(check(INVARIANT, &capture).is_empty());
        capture.log[1] = capture.log[1].replace("\"seq\":5", "\"seq\":0");
        assert_eq!(check(INVARIANT, &capture), ["log line 2 has seq 0, not above the line before it (0)"]);
    }
}
