//! A workflow's graph as its `workflow_started` event describes it: each step with what it
//! depends on, its posture and its read and write sets, and the concurrency limit, which the
//! scheduling rules (WF-DEPENDENTS-READY, WF-WAVES) hold the run against.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::log_line::WorkflowEvent;

/// A step as the `workflow_started` graph describes it.
#[derive(Debug, Default, Clone)]
pub(crate) struct GraphStep {
    pub depends_on: Vec<String>,
    pub writer: bool,
    pub read_set: Vec<String>,
    pub write_set: Vec<String>,
}

/// A `workflow_started` event's graph, by step id, and its `max_concurrency` (unbounded when
/// not given).
pub(crate) fn graph(started: &WorkflowEvent) -> (BTreeMap<String, GraphStep>, u64) {
    let steps = started
        .graph
        .and_then(|graph| graph.get("steps")?.as_array())
        .map(|steps| {
            steps
                .iter()
                .map(|step| {
                    let id = step.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let graph_step = GraphStep {
                        depends_on: strings(step.get("depends_on")),
                        writer: step.get("posture").and_then(Value::as_str) == Some("writer"),
                        read_set: strings(step.get("read_set")),
                        write_set: strings(step.get("write_set")),
                    };
                    (id, graph_step)
                })
                .collect()
        })
        .unwrap_or_default();
    let limit = started.limits.and_then(|limits| limits.get("max_concurrency")?.as_u64());
    (steps, limit.unwrap_or(u64::MAX))
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}
