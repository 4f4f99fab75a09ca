//! LOG-UNIQUE-ID: every Event in a Log has its own `id`, across restarts too: a Session that
//! reopens its Log never stamps an id the Log already holds.

use std::collections::BTreeMap;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-UNIQUE-ID",
    also: &[],
    name: "log_ids_unique",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut first_line: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (idx, line) in evidence.lines.iter().enumerate() {
        let Some(id) = line.id.as_deref() else { continue };
        if let Some(first) = first_line.insert(id, idx + 1) {
            problems.push(format!("log line {} repeats the id {id} of line {first}", idx + 1));
            first_line.insert(id, first);
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
    fn a_repeated_id_is_caught_and_names_both_lines() {
        let mut capture = capture(&[("user_message", json!({})), ("user_message", json!({}))], &[]);
        assert!(check(INVARIANT, &capture).is_empty());
        capture.log[1] = capture.log[1].replace("0000000000000001", "0000000000000000");
        assert_eq!(check(INVARIANT, &capture), ["log line 2 repeats the id 0000000000000000 of line 1"]);
    }
}
