//! LOG-SEQ-GAPLESS (MAY): Log `seq` starts at 0 and grows by one per line, resumes included:
//! the reference's (Pixir's) own stamping, beyond the monotonic seq seed 004 asks for
//! (LOG-SEQ-MONOTONIC).

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-SEQ-GAPLESS",
    also: &[],
    name: "log_seq_gapless",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for (expected, line) in evidence.lines.iter().enumerate() {
        if line.seq != Some(expected as u64) {
            problems.push(format!("log line {} has seq {:?}, expected {expected}", expected + 1, line.seq));
            break;
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn flags_a_gap() {
        let mut capture = capture(&[("user_message", json!({})), ("user_message", json!({}))], &[]);
        capture.log[1] = capture.log[1].replace("\"seq\":1", "\"seq\":2");
        assert_eq!(check(INVARIANT, &capture), ["log line 2 has seq Some(2), expected 1"]);
    }
}
