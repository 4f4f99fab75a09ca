//! The status vocabulary of codex app-server and the three predicates built on it (ADR-012, part B.2.5).
//!
//! Upstream keeps three different notions of "active" on purpose: `looks_live` decides whether a final
//! answer may rewrite a thread status, `looks_active` decides whether input should steer, and
//! `is_terminal` decides whether a merge may restore a stored active turn.

use serde_json::Value;

/// The text of a status that is either a string or `{"type": ..., "activeFlags": [...]}`.
///
/// A string passes through verbatim, `"<nil>"` included: that is a reference quirk
/// (BRIDGE-REF-STATUS-NIL-PASSTHROUGH); only rendering cleans it.
pub fn status_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(map)) => {
            let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
            let flags: Vec<&str> = map
                .get("activeFlags")
                .and_then(Value::as_array)
                .map(|flags| flags.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if kind == "active" && !flags.is_empty() { format!("active[{}]", flags.join(",")) } else { kind.to_owned() }
        }
        _ => String::new(),
    }
}

/// A waiting flag found by substring in a lowercased status text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitingFlag {
    /// `waitingOnApproval`.
    Approval,
    /// `waitingOnUserInput` or `waitingOnInput`.
    Reply,
}

/// Whether `status` carries `flag`.
pub fn has_flag(status: &str, flag: WaitingFlag) -> bool {
    let lowered = status.to_lowercase();
    match flag {
        WaitingFlag::Approval => lowered.contains("waitingonapproval"),
        WaitingFlag::Reply => lowered.contains("waitingonuserinput") || lowered.contains("waitingoninput"),
    }
}

/// completed, interrupted, failed, cancelled or canceled, in any case.
pub fn is_terminal(status: &str) -> bool {
    matches!(status.trim().to_lowercase().as_str(), "completed" | "interrupted" | "failed" | "cancelled" | "canceled")
}

/// The app-server notion of live, used only by final-answer normalization; it ignores `waitingOn`.
pub fn looks_live(status: &str) -> bool {
    let lowered = status.trim().to_lowercase();
    lowered == "active"
        || lowered.starts_with("active[")
        || lowered.contains("inprogress")
        || lowered.contains("running")
}

/// The daemon notion of active for polling and input: a known active turn, or a status that
/// reads active, waiting, in progress or running.
pub fn looks_active(status: &str, active_turn_id: &str) -> bool {
    !active_turn_id.trim().is_empty() || looks_live(status) || status.to_lowercase().contains("waitingon")
}

/// Whether a turn status marks its turn as the active one when the thread names none (B.2.1).
pub fn turn_marks_active(turn_status: &str) -> bool {
    let lowered = turn_status.to_lowercase();
    lowered == "inprogress" || lowered.contains("active")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_objects_render_their_flags() {
        let status = json!({"type": "active", "activeFlags": ["waitingOnUserInput"]});
        assert_eq!(status_text(Some(&status)), "active[waitingOnUserInput]");
        assert_eq!(status_text(Some(&json!({"type": "idle"}))), "idle");
        assert_eq!(status_text(Some(&json!({"type": "active", "activeFlags": []}))), "active");
        assert_eq!(status_text(Some(&json!("<nil>"))), "<nil>");
        assert_eq!(status_text(None), "");
    }

    #[test]
    fn the_three_vocabularies_differ_on_waiting() {
        assert!(looks_active("waitingOnInput", ""));
        assert!(!looks_live("waitingOnInput"));
        assert!(!is_terminal("waitingOnInput"));
        assert!(is_terminal(" Cancelled "));
        assert!(!looks_active("idle", ""));
        assert!(looks_active("idle", "turn-1"));
        assert!(has_flag("active[waitingOnApproval]", WaitingFlag::Approval));
        assert!(has_flag("waitingOnInput", WaitingFlag::Reply));
    }
}
