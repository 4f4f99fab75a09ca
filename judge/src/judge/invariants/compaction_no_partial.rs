//! REPLAY-COMPACTION-NO-PARTIAL: no failed attempt's text reaches the model through a
//! compaction. From the request before the first rewritten conversation ([`rewrites`]: the one
//! that asks for a summary) on, no message that is not assistant content (a summary is user
//! content; assistant content anywhere is REPLAY-NO-PARTIAL's) carries a partial text, and no
//! `history_compaction` of the Log holds one in its summary. Partial texts come from the Log
//! or, for an agent without one, from the script ([`partial_texts`]); one shorter than
//! [`SEARCHED_FROM_CHARS`] counts only as a whole message.

use std::collections::{BTreeMap, HashMap};

use gauntlet_agent::EventType;
use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::partials::{Partial, partial_texts};
use crate::judge::views::requests::{read_new_messages, read_requests, rewrites};

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-COMPACTION-NO-PARTIAL",
    also: &[],
    name: "compaction_no_partial",
    applies: Scope::Replay,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let (_, partials) = partial_texts(evidence);
    if partials.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for line in evidence.lines.iter().filter(|line| line.kind == EventType::HistoryCompaction) {
        let summary = line.summary().and_then(|summary| summary.summary).unwrap_or_default();
        for Partial { origin, text: partial, .. } in &partials {
            if holds(summary, partial) {
                let at = line.seq.map_or_else(String::new, |seq| format!(" at seq {seq}"));
                problems.push(format!("the compaction{at} summarises the partial text of {origin}: {partial:?}"));
            }
        }
    }
    let Some(from) = first_judged(evidence) else { return problems };
    // What each run carries: the partial's turn, and the finding.
    let mut found: BTreeMap<usize, Vec<(Option<usize>, String)>> = BTreeMap::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        let found = found.entry(conversation.run).or_default();
        for message in new {
            let Some(text) = message.text().filter(|_| !matches!(message, Message::Assistant { .. })) else { continue };
            for Partial { origin, text: partial, turn } in &partials {
                if holds(text, partial) {
                    found.push((
                        *turn,
                        format!("carries the partial text of {origin} beside a compaction: {partial:?}"),
                    ));
                }
            }
        }
        if idx >= from {
            // A request of the partial's own turn that carries it resumes the failed answer (a
            // continuation, its conversation rewritten or not), as REPLAY-NO-PARTIAL reads it:
            // no compaction carried it; a later turn's request that still does is judged.
            let turn = request.turn.map(|turn| turn + 1);
            let carried = found.iter().filter(|(own, _)| own.is_none() || *own != turn);
            problems.extend(carried.map(|(_, what)| format!("request {} {what}", idx + 1)));
        }
    }
    problems
}

/// How long a partial text must be to be looked for inside other text: a shorter one (a cut
/// first delta such as "The") is found only as a whole message, so an agent's own words (its
/// summary instruction) are not taken for it.
const SEARCHED_FROM_CHARS: usize = 12;

/// Whether `text` carries `partial`.
fn holds(text: &str, partial: &str) -> bool {
    if partial.trim().chars().count() >= SEARCHED_FROM_CHARS {
        text.contains(partial)
    } else {
        !partial.trim().is_empty() && text.trim() == partial.trim()
    }
}

/// The first request judged: the one before the first rewritten conversation on its route.
fn first_judged(evidence: &Evidence) -> Option<usize> {
    let rewritten = rewrites(evidence);
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (idx, (request, _)) in read_requests(evidence).enumerate() {
        if rewritten[idx] {
            return Some(last.get(request.route.as_str()).copied().unwrap_or(idx));
        }
        last.insert(&request.route, idx);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{assistant, body, capture, check, user};
    use serde_json::json;

    fn log(summary: &str) -> Vec<(&'static str, serde_json::Value)> {
        vec![
            ("user_message", json!({"text": "one"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ("user_message", json!({"text": "two"})),
            ("history_compaction", json!({"range": {"from_seq": 0, "to_seq": 2}, "summary": summary})),
        ]
    }

    #[test]
    fn a_summary_carrying_partial_text_is_caught_in_the_log_and_on_the_wire() {
        let bodies = |summary: &str| {
            [
                body(vec![user("one")]),
                body(vec![user("one"), user("two")]),
                body(vec![user("one"), user("two"), user("Summarise")]),
                body(vec![user(summary), user("two")]),
                body(vec![user(summary), user("two"), assistant("b"), user("three")]),
            ]
        };
        let clean = "The user asked one thing.";
        assert_eq!(check(INVARIANT, &capture(&log(clean), &bodies(clean))), Vec::<String>::new());
        let leaked = "The answer began: Useful partial";
        assert_eq!(
            check(INVARIANT, &capture(&log(leaked), &bodies(leaked))),
            [
                "the compaction at seq 4 summarises the partial text of seq 1: \"Useful partial\"",
                "request 4 carries the partial text of seq 1 beside a compaction: \"Useful partial\"",
                "request 5 carries the partial text of seq 1 beside a compaction: \"Useful partial\"",
            ]
        );
    }

    /// An agent that drops a failed attempt's text from its conversation (and then writes the
    /// next prompt with the partial text quoted as user content, say) rewrote no history: that
    /// is no compaction, so nothing here is judged beside one (REPLAY-NO-PARTIAL judges the
    /// assistant content).
    #[test]
    fn dropping_a_failed_attempt_is_no_compaction() {
        let no_compaction = vec![
            ("user_message", json!({"text": "one"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ("user_message", json!({"text": "two"})),
        ];
        let bodies = [
            body(vec![user("one"), assistant("Useful partial")]),
            body(vec![user("one"), user("two: it said Useful partial")]),
        ];
        assert_eq!(check(INVARIANT, &capture(&no_compaction, &bodies)), Vec::<String>::new());
    }

    /// An agent that resumes a failed answer in its own turn by rewriting the conversation (the
    /// partial text quoted in a user message for the model to go on from) compacted nothing:
    /// that request is no finding here; a later turn's request still carrying it is.
    #[test]
    fn a_continuation_in_its_own_turn_is_no_compaction() {
        let log = vec![
            ("user_message", json!({"text": "one"})),
            ("assistant_message", json!({"text": "Useful partial", "metadata": {"partial": true}})),
            ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ("user_message", json!({"text": "two"})),
        ];
        let resumed = "one\n\nYour answer was cut off after: Useful partial. Go on.";
        let bodies = [
            body(vec![user("one")]),
            body(vec![user(resumed)]),
            body(vec![user(resumed), assistant("the rest"), user("two")]),
        ];
        let mut capture = capture(&log, &bodies);
        for (request, turn) in capture.requests.iter_mut().zip([0, 0, 1]) {
            request.turn = Some(turn);
        }
        assert_eq!(
            check(INVARIANT, &capture),
            ["request 3 carries the partial text of seq 1 beside a compaction: \"Useful partial\""]
        );
    }
}
