//! When the reference compacts History, and what it records (LOG-COMPACTION-RECORD,
//! REPLAY-COMPACTION-SUMMARY; seed 004 `history_compaction`, pixir.md 1.2 and 2).
//!
//! The trigger is ADR 0020's `critical_pressure_preflight`: before a Provider call, the last
//! `provider_usage` since the latest compaction reported at least the Session's
//! `compact_at_tokens` input tokens. The usage is the Provider's own report, so the trigger is
//! as deterministic as the script that reports it. The range is everything before the Turn's
//! `user_message`: the Turn in progress (its prompt, its tool calls and their results) stays
//! verbatim after the summary (REPLAY-COMPACTION-KEEPS-PROMPT, REPLAY-COMPACTION-KEEPS-PAIRS),
//! and a Turn that passes the budget on its own is not compacted again. The summary is the
//! model's (`model_assisted_operational_summary_v1`), asked for in a request that carries the
//! conversation as it stands and then [`INSTRUCTION`], as codex and opencode ask theirs; the
//! request is folded like any other, so no failed attempt's text reaches it
//! (REPLAY-COMPACTION-NO-PARTIAL).

use serde_json::{Value, json};

use crate::event::{Event, EventType, Payload, object};
use crate::replay::compaction_range;

/// What the summary request asks after the conversation, recorded with the compaction.
pub const INSTRUCTION: &str = "Summarise the conversation so far for your own later use: the user's goals, what was done, \
     the files and tools involved, and what is left to do. Answer with the summary only.";

/// The strategy the record names: the model wrote the summary.
pub const STRATEGY: &str = "model_assisted_operational_summary_v1";

/// The ADR 0020 trigger the record names.
pub const TRIGGER: &str = "critical_pressure_preflight";

/// A compaction that is due: what it covers and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The last seq of the range (the range starts at seq 0).
    pub to_seq: u64,
    /// Events in the range.
    pub source_event_count: usize,
    /// Events after the range, kept verbatim.
    pub tail_event_count: usize,
    /// The input tokens the last call reported.
    pub input_tokens: u64,
    /// The budget they reached.
    pub budget_tokens: u64,
}

/// The compaction due before the next Provider call of a Turn whose History is `history`, if
/// any: the last call since the latest compaction reported `budget` input tokens or more, and
/// something before the Turn's `user_message` is not yet compacted.
pub fn due(history: &[Event], budget: Option<u64>) -> Option<Due> {
    let budget_tokens = budget?;
    let latest = history.iter().rposition(|event| compaction_range(event).is_some());
    let since = latest.map_or(0, |at| at + 1);
    let usage = history.get(since..)?.iter().rev().find(|event| event.kind() == EventType::ProviderUsage)?;
    let input_tokens = usage.data().get("usage_summary")?.get("input_tokens")?.as_u64()?;
    if input_tokens < budget_tokens {
        return None;
    }
    let prompt = history.iter().rev().find(|event| event.kind() == EventType::UserMessage)?;
    let to_seq = prompt.seq()?.checked_sub(1)?;
    if latest.and_then(|at| compaction_range(&history[at])).is_some_and(|(_, to)| to >= to_seq) {
        return None;
    }
    let source_event_count = history.iter().filter(|event| event.seq().is_some_and(|seq| seq <= to_seq)).count();
    Some(Due {
        to_seq,
        source_event_count,
        tail_event_count: history.len() - source_event_count,
        input_tokens,
        budget_tokens,
    })
}

/// The user item that asks for the summary, after the conversation.
pub fn instruction_item() -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": INSTRUCTION}]})
}

/// The `history_compaction` of `due` with the model's `summary`.
pub fn record(due: &Due, summary: &str) -> Payload {
    Payload::history_compaction(object(json!({
        "strategy": STRATEGY,
        "trigger": TRIGGER,
        "range": {"from_seq": 0, "to_seq": due.to_seq},
        "source_event_count": due.source_event_count,
        "tail_event_count": due.tail_event_count,
        "input_tokens": due.input_tokens,
        "budget_tokens": due.budget_tokens,
        "instruction": INSTRUCTION,
        "summary": summary,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Data;
    use crate::replay::tests::history;

    fn usage(input: u64) -> Payload {
        Payload::provider_usage(object(json!({"usage_summary": {"input_tokens": input}})))
    }

    #[test]
    fn due_when_the_last_call_reaches_the_budget_and_something_precedes_the_turn() {
        let mut payloads = vec![
            Payload::user_message("one"),
            usage(10),
            Payload::assistant_message("a", Data::new()),
            Payload::user_message("two"),
            usage(500),
        ];
        assert_eq!(due(&history(payloads.clone()), None), None);
        assert_eq!(due(&history(payloads.clone()), Some(501)), None);
        let found = due(&history(payloads.clone()), Some(500));
        assert_eq!(
            found,
            Some(Due { to_seq: 2, source_event_count: 3, tail_event_count: 2, input_tokens: 500, budget_tokens: 500 })
        );
        // Once compacted, the same range is not compacted again.
        payloads.push(usage(20));
        payloads.push(record(&found.unwrap(), "sum"));
        payloads.push(usage(900));
        assert_eq!(due(&history(payloads), Some(500)), None);
    }

    #[test]
    fn a_first_turn_has_nothing_to_compact() {
        assert_eq!(due(&history(vec![Payload::user_message("one"), usage(900)]), Some(1)), None);
    }
}
