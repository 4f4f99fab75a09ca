//! REPLAY-AUDIT-ONLY: audit-only evidence never reaches Provider input. Every input item is
//! conversation (a message, a tool call or result, a reasoning item: whatever the dialect,
//! read as a [`Conversation`](gauntlet_mock_provider::Conversation)), and no failure message
//! from `turn_failed` appears in any input text.

use gauntlet_mock_provider::Message;

use super::{Invariant, Scope, judge_messages};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-AUDIT-ONLY", also: &[], name: "audit_only_not_replayed", scope: Scope::Replay, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let failure_messages: Vec<&str> = evidence
        .lines
        .iter()
        .filter(|line| line.kind == "turn_failed")
        .filter_map(|line| line.str_field("error_message"))
        .filter(|message| !message.is_empty())
        .collect();
    judge_messages(evidence, |_, message, found| {
        if let Message::Other { kind } = message {
            found.push(format!("carries a non-conversation input item of type `{kind}`"));
        }
        if let Some(text) = message.text()
            && let Some(message) = failure_messages.iter().find(|message| text.contains(**message))
        {
            found.push(format!("carries turn_failed evidence: {message:?}"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::invariants::fixture::{body, capture, check, user};
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
}
