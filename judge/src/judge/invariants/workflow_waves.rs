//! WF-WAVES (MAY): a wave runs no more steps than the workflow's `max_concurrency`, and no
//! two steps of a wave conflict: a writer whose write set overlaps another step's write or
//! read set (pixir.md 8 "Conflicts", "Waves"; the seeds do not say how waves are packed).
//! Read from the spine: the `workflow_started` graph and each `step_scheduled`'s wave.

use std::collections::BTreeMap;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::workflow_graph::{GraphStep, graph};
use crate::log_line::Line;

pub const INVARIANT: Invariant = Invariant {
    id: "WF-WAVES",
    also: &[],
    name: "workflow_waves",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

/// Whether two path sets overlap: the same path, one inside the other, or `**/*`.
fn overlap(left: &[String], right: &[String]) -> bool {
    left.iter().any(|a| {
        right.iter().any(|b| {
            a == "**/*" || b == "**/*" || a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
        })
    })
}

fn check(evidence: &Evidence) -> Vec<String> {
    let mut graphs = BTreeMap::new();
    let mut waves: BTreeMap<(&str, u64), Vec<&str>> = BTreeMap::new();
    for event in evidence.lines.iter().filter_map(Line::workflow_event) {
        let workflow = event.workflow_id.unwrap_or_default();
        match event.kind.unwrap_or_default() {
            "workflow_started" => {
                graphs.insert(workflow, graph(&event));
            }
            "step_scheduled" => {
                let wave = event.wave.unwrap_or_default();
                waves.entry((workflow, wave)).or_default().push(event.step_id.unwrap_or_default());
            }
            _ => {}
        }
    }
    let mut problems = Vec::new();
    for ((workflow, wave), steps) in &waves {
        let Some((graph, capacity)) = graphs.get(workflow) else { continue };
        if steps.len() as u64 > *capacity {
            problems.push(format!(
                "workflow {workflow} wave {wave} runs {} steps, over max_concurrency {capacity}",
                steps.len()
            ));
        }
        for (idx, a) in steps.iter().enumerate() {
            for b in &steps[idx + 1..] {
                let (Some(left), Some(right)) = (graph.get(*a), graph.get(*b)) else { continue };
                let writes_into = |writer: &GraphStep, other: &GraphStep| {
                    writer.writer
                        && (overlap(&writer.write_set, &other.write_set) || overlap(&writer.write_set, &other.read_set))
                };
                if writes_into(left, right) || writes_into(right, left) {
                    problems
                        .push(format!("workflow {workflow} wave {wave} runs {a} and {b} together, whose sets overlap"));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    #[test]
    fn overlapping_writers_in_one_wave_are_caught() {
        let started = json!({"kind": "workflow_started", "workflow_id": "w", "limits": {"max_concurrency": 1},
            "graph": {"steps": [{"id": "a", "posture": "writer", "write_set": ["src"]}, {"id": "b", "posture": "writer", "write_set": ["src/x"]}]}});
        let capture = capture(
            &[
                ("workflow_event", started),
                ("workflow_event", json!({"kind": "step_scheduled", "workflow_id": "w", "step_id": "a", "wave": 1})),
                ("workflow_event", json!({"kind": "step_scheduled", "workflow_id": "w", "step_id": "b", "wave": 1})),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow w wave 1 runs 2 steps, over max_concurrency 1",
                "workflow w wave 1 runs a and b together, whose sets overlap"
            ]
        );
    }
}
