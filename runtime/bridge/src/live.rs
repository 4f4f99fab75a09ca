//! Live app-server notifications to observer events (`NormalizeAppServerLiveEvent`, the turn lifecycle subset).
//!
//! A live event may only say what the notification says: a commentary message is never a final
//! classification, so it produces no event at all.

use serde_json::Value;

use crate::render::{first_string, payload_string};
use crate::snapshot::{DiffEvent, DiffKind};
use crate::status::status_text;

/// The events one notification gives: `turn/started` (status defaults to `inProgress`),
/// `turn/completed` (status defaults to `completed`), and `item/completed` of a `final_answer`
/// agent message; anything else gives none.
pub fn events(method: &str, params: &Value) -> Vec<DiffEvent> {
    let turn = params.get("turn");
    let turn_id = turn
        .and_then(Value::as_object)
        .map(|turn| first_string(turn, &["id"]))
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| payload_string(params.get("turnId")));
    let status = |default: &str| {
        let status = status_text(turn.and_then(|turn| turn.get("status")));
        if status.is_empty() { default.to_owned() } else { status }
    };
    match method {
        "turn/started" => vec![DiffEvent { kind: DiffKind::TurnStarted, turn_id, status: status("inProgress") }],
        "turn/completed" => vec![DiffEvent { kind: DiffKind::TurnCompleted, turn_id, status: status("completed") }],
        "item/completed" => {
            let item = params.get("item");
            let is_final = item.and_then(|item| item.get("type")).and_then(Value::as_str) == Some("agentMessage")
                && item.and_then(|item| item.get("phase")).and_then(Value::as_str) == Some("final_answer");
            if is_final {
                vec![DiffEvent { kind: DiffKind::FinalAnswer, turn_id, status: String::new() }]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turn_notifications_map_with_default_statuses() {
        let started = events("turn/started", &json!({"threadId": "t", "turn": {"id": "turn-10"}}));
        assert_eq!((started[0].kind, started[0].status.as_str()), (DiffKind::TurnStarted, "inProgress"));
        let completed =
            events("turn/completed", &json!({"threadId": "t", "turn": {"id": "turn-10", "status": "completed"}}));
        assert_eq!((completed[0].kind, completed[0].turn_id.as_str()), (DiffKind::TurnCompleted, "turn-10"));
    }

    #[test]
    fn commentary_is_never_final() {
        let item = json!({"threadId": "t", "turnId": "u", "item": {"type": "agentMessage", "phase": "commentary", "text": "x"}});
        assert!(events("item/completed", &item).is_empty());
    }
}
