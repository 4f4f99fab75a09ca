//! The `plan` tool: the model's to-do list, shown to the client as an ACP `plan` update
//! (ACP-PLAN-WHOLE-LIST; seed 004 `Pixir.Event.plan`).
//!
//! Each call carries the complete current list, and the update it publishes carries that
//! whole list, never a delta (ACP replaces the client's list on each update). The list is
//! ephemeral, like `status`: it is published, never recorded (LOG-NO-EPHEMERAL), so the Log
//! holds only the call and its result, and the replay fold never sees a plan.

use serde_json::{Value, json};

use super::{ToolFuture, ToolSet, failed};
use crate::event::{Payload, object};
use crate::session::Session;

/// The `plan` tool, registered when the agent is configured to offer it.
#[derive(Debug, Clone, Copy)]
pub struct Plan;

/// The tool's name, as offered to the model.
const NAME: &str = "plan";

impl ToolSet for Plan {
    fn definitions(&self) -> Vec<Value> {
        vec![json!({
            "type": "function",
            "name": NAME,
            "description": "Replace the to-do list shown to the user with the complete current list: every entry, \
                            not only the ones that changed.",
            "parameters": {
                "type": "object",
                "properties": {"entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "priority": {"type": "string", "enum": PRIORITIES},
                            "status": {"type": "string", "enum": STATUSES},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false,
                    },
                }},
                "required": ["entries"],
                "additionalProperties": false,
            },
        })]
    }

    fn execute<'a>(&'a mut self, session: &'a mut Session, name: &'a str, args: &'a Value) -> Option<ToolFuture<'a>> {
        if name != NAME {
            return None;
        }
        Some(Box::pin(async move {
            Ok(match entries(args) {
                Ok(entries) => {
                    let output = summary(&entries);
                    session.publish(Payload::plan(entries));
                    object(json!({"ok": true, "output": output}))
                }
                Err(message) => failed("invalid_args", &message),
            })
        }))
    }
}

/// ACP's `PlanEntryPriority` values.
const PRIORITIES: [&str; 3] = ["high", "medium", "low"];
/// ACP's `PlanEntryStatus` values.
const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// The call's entries as ACP `PlanEntry` objects (`priority` defaults to `medium`), or why
/// the arguments are refused.
fn entries(args: &Value) -> Result<Vec<Value>, String> {
    let list = args.get("entries").and_then(Value::as_array).ok_or("`entries` must be an array")?;
    list.iter()
        .enumerate()
        .map(|(idx, entry)| {
            let n = idx + 1;
            let field = |key: &str| entry.get(key).and_then(Value::as_str);
            let content = field("content").ok_or_else(|| format!("entry {n}: `content` must be a string"))?;
            let status = field("status")
                .filter(|status| STATUSES.contains(status))
                .ok_or_else(|| format!("entry {n}: `status` must be one of {}", STATUSES.join(", ")))?;
            let priority = match field("priority") {
                None if entry.get("priority").is_none() => "medium",
                Some(priority) if PRIORITIES.contains(&priority) => priority,
                _ => return Err(format!("entry {n}: `priority` must be one of {}", PRIORITIES.join(", "))),
            };
            Ok(json!({"content": content, "priority": priority, "status": status}))
        })
        .collect()
}

/// The result the model reads: how many entries, by status.
fn summary(entries: &[Value]) -> String {
    let count = |status: &str| entries.iter().filter(|entry| entry["status"] == status).count();
    format!(
        "plan updated: {} entries ({} completed, {} in progress, {} pending)",
        entries.len(),
        count("completed"),
        count("in_progress"),
        count("pending")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_default_the_priority_and_refuse_unknown_statuses() {
        let args = json!({"entries": [{"content": "a", "status": "pending"}, {"content": "b", "status": "completed", "priority": "high"}]});
        assert_eq!(
            entries(&args).unwrap(),
            [
                json!({"content": "a", "priority": "medium", "status": "pending"}),
                json!({"content": "b", "priority": "high", "status": "completed"}),
            ]
        );
        let bad = json!({"entries": [{"content": "a", "status": "done"}]});
        assert_eq!(entries(&bad).unwrap_err(), "entry 1: `status` must be one of pending, in_progress, completed");
        assert!(entries(&json!({})).is_err());
        assert!(entries(&json!({"entries": [{"content": "a", "status": "pending", "priority": 1}]})).is_err());
    }

    #[test]
    fn the_summary_counts_by_status() {
        let list = entries(&json!({"entries": [
            {"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"},
            {"content": "c", "status": "pending"},
        ]}))
        .unwrap();
        assert_eq!(summary(&list), "plan updated: 3 entries (1 completed, 1 in progress, 1 pending)");
    }
}
