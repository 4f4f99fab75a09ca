//! LOG-COMPACTION-RECORD: a `history_compaction` records the range it covers and its summary:
//! `range.from_seq` ≤ `range.to_seq`, both below its own `seq` (it is appended after what it
//! covers), and a non-empty `summary`; the covered Events stay in the Log (seed 004: "without
//! losing the Log as source of truth"), judged at the range's two ends, since `seq` may have
//! gaps.

use gauntlet_agent::EventType;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant = Invariant {
    id: "LOG-COMPACTION-RECORD",
    also: &[],
    name: "compaction_recorded",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    // Seqs need not be gapless (LOG-SEQ-GAPLESS is a MAY): the range's two ends are what the
    // Log must still hold.
    let seqs: std::collections::HashSet<u64> = evidence.lines.iter().filter_map(|line| line.seq).collect();
    let mut problems = Vec::new();
    for line in evidence.lines.iter().filter(|line| line.kind == EventType::HistoryCompaction) {
        let at = line.seq.map_or_else(|| "a history_compaction without a seq".to_owned(), |seq| format!("seq {seq}"));
        let Some(summary) = line.summary() else { continue };
        match (summary.from_seq, summary.to_seq) {
            (Some(from), Some(to)) if from <= to && line.seq.is_none_or(|seq| to < seq) => {
                if let Some(missing) = [from, to].into_iter().find(|seq| !seqs.contains(seq)) {
                    problems
                        .push(format!("the compaction at {at} covers seq {missing}, which the Log no longer holds"));
                }
            }
            (Some(from), Some(to)) => {
                problems.push(format!("the compaction at {at} covers seq {from}..{to}, not a range before it"));
            }
            _ => problems.push(format!("the compaction at {at} records no range {{from_seq, to_seq}}")),
        }
        if summary.summary.is_none_or(str::is_empty) {
            problems.push(format!("the compaction at {at} records no summary"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::{Value, json};

    #[test]
    fn a_compaction_needs_a_range_before_it_and_a_summary() {
        let log = |data: Value| {
            capture(
                &[
                    ("user_message", json!({"text": "q"})),
                    ("assistant_message", json!({"text": "a"})),
                    ("history_compaction", data),
                ],
                &[],
            )
        };
        let good = json!({"range": {"from_seq": 0, "to_seq": 1}, "summary": "s"});
        assert_eq!(check(INVARIANT, &log(good)), Vec::<String>::new());
        assert_eq!(
            check(INVARIANT, &log(json!({"range": {"from_seq": 0, "to_seq": 2}, "summary": ""}))),
            [
                "the compaction at seq 2 covers seq 0..2, not a range before it",
                "the compaction at seq 2 records no summary"
            ]
        );
        assert_eq!(
            check(INVARIANT, &log(json!({"summary": "s"}))),
            ["the compaction at seq 2 records no range {from_seq, to_seq}"]
        );
    }
}
