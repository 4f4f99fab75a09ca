//! BRIDGE-MERGE-NO-STALE-ACTIVE: merging the stored row into a fresh `thread/read` fills only
//! what the read left empty, and never brings back the stored active turn once the merged
//! thread status is terminal.
//!
//! Judged on each `merge` step's `thread` record against the stored row of the scenario's
//! config and the read itself: a field the stored row has is never empty after the merge, and
//! a terminal record naming the stored active turn is a stale restore unless the read itself
//! could have named it (as `activeTurnId`, or as a turn still running with no final answer).

use serde_json::Value;

use super::readings::Invariant;
use crate::lifecycle::capture::LifecycleCapture;
use crate::lifecycle::{Family, LifecycleScenario};

/// The rule.
pub const INVARIANT: Invariant = Invariant {
    id: "BRIDGE-MERGE-NO-STALE-ACTIVE",
    also: &[],
    name: "merge_no_stale_active",
    applies: Some(Family::Bridge),
    check,
};

/// The stored row's fields a merge fills when the read leaves them empty.
const FILLED: [&str; 5] = ["id", "title", "project", "cwd", "status"];

/// ADR-012's terminal thread and turn statuses, in any case.
const TERMINAL: [&str; 5] = ["completed", "interrupted", "failed", "cancelled", "canceled"];

fn check(scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Vec<String> {
    let stored = &scenario.config["thread"];
    let mut messages = Vec::new();
    for record in capture.records.iter().filter(|record| record["record"] == "thread") {
        let Some(read) = record["step"].as_u64().and_then(|step| merge_read(scenario, step)) else { continue };
        for field in FILLED {
            if text(&stored[field]).is_some() && text(&record[field]).is_none() {
                messages.push(format!("the stored `{field}` {} was not filled in: {record}", stored[field]));
            }
        }
        let stale = text(&stored["active_turn_id"]);
        let terminal = text(&record["status"]).is_some_and(is_terminal);
        if terminal && stale.is_some() && stale == text(&record["active_turn_id"]) && !read_names(&read, stale) {
            messages.push(format!(
                "the stored active turn {} was restored into a {} thread: {record}",
                stored["active_turn_id"], record["status"]
            ));
        }
    }
    messages
}

/// The `thread/read` result of step `step`, when that step is a merge.
fn merge_read(scenario: &LifecycleScenario, step: u64) -> Option<Value> {
    let merge = &scenario.steps.get(usize::try_from(step).ok()?)?["do"]["merge"];
    match (&merge["result"], merge["result_json"].as_str()) {
        (Value::Null, Some(json)) => serde_json::from_str(json).ok(),
        (Value::Null, None) => merge.is_object().then_some(Value::Null),
        (result, _) => Some(result.clone()),
    }
}

/// Whether the read itself may name `turn` as active: its `activeTurnId` (flat or under
/// `thread`), or a turn of that id whose status is not terminal and that holds no final answer.
fn read_names(read: &Value, turn: Option<&str>) -> bool {
    let thread = if read["thread"].is_object() { &read["thread"] } else { read };
    if text(&thread["activeTurnId"]) == turn {
        return true;
    }
    thread["turns"].as_array().into_iter().flatten().any(|candidate| {
        let finished = text(&candidate["status"]).is_some_and(is_terminal);
        let final_answer = candidate["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|item| item["type"] == "agentMessage" && item["phase"] == "final_answer");
        text(&candidate["id"]) == turn && !finished && !final_answer
    })
}

fn is_terminal(status: &str) -> bool {
    TERMINAL.iter().any(|terminal| status.trim().eq_ignore_ascii_case(terminal))
}

/// A string value that is not blank.
fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|text| !text.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    const MERGE: &str = "title = \"t\"\nkind = \"bridge.merge\"\n[config]\n\
        thread = { id = \"thread-1\", title = \"Stale\", cwd = \"/w\", status = \"active\", active_turn_id = \"turn-stale\" }\n\
        [[step]]\nat_ms = 0\ndo.merge.result_json = '''\n\
        {\"id\": \"thread-1\", \"status\": \"completed\", \"turns\": [{\"id\": \"turn-stale\", \"status\": \"inProgress\", \
        \"items\": [{\"id\": \"m\", \"type\": \"agentMessage\", \"phase\": \"final_answer\", \"text\": \"Done.\"}]}]}\n'''\n";

    fn judged(record: Value) -> Vec<String> {
        let scenario = crate::lifecycle::parse(MERGE, Path::new("x.toml")).unwrap();
        check(&scenario, &LifecycleCapture { records: vec![record], ..Default::default() })
    }

    fn thread(status: &str, active_turn_id: &str, cwd: &str) -> Value {
        json!({ "record": "thread", "step": 0, "id": "thread-1", "title": "thread-1", "project": "p",
                "cwd": cwd, "status": status, "active_turn_id": active_turn_id })
    }

    #[test]
    fn a_stale_active_turn_restored_into_a_terminal_thread_is_caught() {
        let messages = judged(thread("completed", "turn-stale", "/w"));
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].contains("stored active turn \"turn-stale\" was restored into a \"completed\" thread"));
        assert!(judged(thread("completed", "", "/w")).is_empty());
        // Not terminal: the reference quirk of an `idle` merge restoring it is not this rule's.
        assert!(judged(thread("idle", "turn-stale", "/w")).is_empty());
    }

    #[test]
    fn a_stored_field_left_empty_is_caught() {
        let messages = judged(thread("completed", "", ""));
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].contains("the stored `cwd` \"/w\" was not filled in"));
    }

    #[test]
    fn a_turn_the_read_itself_shows_running_may_stay_active() {
        let read = json!({"thread": {"activeTurnId": "turn-9"}});
        assert!(read_names(&read, Some("turn-9")));
        let running = json!({"turns": [{"id": "turn-9", "status": "inProgress", "items": []}]});
        assert!(read_names(&running, Some("turn-9")));
        let finished = json!({"turns": [{"id": "turn-9", "status": "inProgress",
            "items": [{"type": "agentMessage", "phase": "final_answer"}]}]});
        assert!(!read_names(&finished, Some("turn-9")));
    }
}
