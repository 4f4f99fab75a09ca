//! REPLAY-AUDIT-ONLY: audit-only evidence never reaches Provider input. For a runtime that keeps
//! a gauntlet Log, whose audit events are known: every input item is conversation (a message,
//! a tool call or result, a reasoning item: whatever the dialect, read as a
//! [`Conversation`](gauntlet_mock_provider::Conversation)), and no failure message from
//! `turn_failed` appears in any input text. An agent without one may send items of its own
//! (a web search call, a compaction item) that are no audit evidence; what it shows of a
//! failure is REPLAY-NO-DIAGNOSTIC's.

use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::judge_messages;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-AUDIT-ONLY", also: &[], name: "audit_only_not_replayed", applies: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    if evidence.capture.log.is_empty() {
        return Vec::new();
    }
    let failure_messages: Vec<&str> = evidence
        .lines
        .iter()
        .filter_map(|line| line.turn_failed()?.error_message)
        .filter(|message| !message.is_empty())
        .collect();
    judge_messages(evidence, |_, _, message, found| {
        if let Message::Other { kind } = message {
            found.push(Violation::new(format!("carries a non-conversation input item of type `{kind}`")));
        }
        if let Some(text) = message.text()
            && let Some(message) = failure_messages.iter().find(|message| text.contains(**message))
        {
            found.push(Violation::new(format!("carries turn_failed evidence: {message:?}")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, capture, check, user};
    use serde_json::json;

    #[test]
    fn a_replayed_failure_message_is_caught() {
        let log = [
            ("user_message", json!({"text": "q"})),
            ("turn_failed", json!({"terminal_status": "failed", "error_message": "stream exited"})),
        ];
        let capture = capture(&log, &[body(vec![user("q"), user("Previous error: stream exited")])]);
        assert_eq!(check(INVARIANT, &capture), ["request 1 carries turn_failed evidence: \"stream exited\""]);
    }

    /// An item that is not conversation is audit evidence a Log-keeping runtime replayed; an
    /// agent without a Log may send items of its own (a web search call).
    #[test]
    fn a_non_conversation_item_is_judged_where_a_log_says_what_is_audit_evidence() {
        let search = json!({"type": "web_search_call", "id": "ws_1", "status": "completed"});
        let bodies = [body(vec![user("q"), search])];
        let logged = capture(&[("user_message", json!({"text": "q"}))], &bodies);
        assert_eq!(
            check(INVARIANT, &logged),
            ["request 1 carries a non-conversation input item of type `web_search_call`"]
        );
        assert!(check(INVARIANT, &capture(&[], &bodies)).is_empty());
    }
}
