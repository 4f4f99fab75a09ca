//! WF-DEPENDENTS-READY: a Workflow step starts only when every dependency was decided
//! `checkpoint_ready` before it was scheduled (a partial checkpoint does not unblock), and a
//! held step never starts (seed 001, ADR 0014: "Downstream steps should unlock only from
//! checkpoint_ready"). Read from the workflow spine; how a wave is packed is WF-WAVES'.

use std::collections::BTreeMap;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::workflow_graph::{GraphStep, graph};

pub const INVARIANT: Invariant = Invariant {
    id: "WF-DEPENDENTS-READY",
    also: &[],
    name: "workflow_schedule_safe",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let mut graphs: BTreeMap<String, (BTreeMap<String, GraphStep>, u64)> = BTreeMap::new();
    let mut decided: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut held: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut scheduled: BTreeMap<(String, String), u64> = BTreeMap::new();
    for line in &evidence.lines {
        let Some(event) = line.workflow_event() else { continue };
        let workflow = event.workflow_id.unwrap_or_default().to_owned();
        let step = event.step_id.unwrap_or_default().to_owned();
        let seq = line.seq.unwrap_or_default();
        match event.kind.unwrap_or_default() {
            "workflow_started" => {
                graphs.insert(workflow, graph(&event));
            }
            "step_scheduled" => {
                let graph_step =
                    graphs.get(&workflow).and_then(|(steps, _)| steps.get(&step)).cloned().unwrap_or_default();
                for dep in &graph_step.depends_on {
                    let status = decided.get(&(workflow.clone(), dep.clone()));
                    if status.map(String::as_str) != Some("checkpoint_ready") {
                        problems.push(format!(
                            "workflow {workflow} starts {step} at seq {seq} while its dependency {dep} is {}",
                            status.map_or("undecided", String::as_str)
                        ));
                    }
                }
                if let Some(held_seq) = held.get(&(workflow.clone(), step.clone())) {
                    problems.push(format!("workflow {workflow} starts {step} at seq {seq}, held at seq {held_seq}"));
                }
                scheduled.insert((workflow, step), seq);
            }
            "step_held" => {
                if let Some(started) = scheduled.get(&(workflow.clone(), step.clone())) {
                    problems.push(format!("workflow {workflow} holds {step} at seq {seq}, started at seq {started}"));
                }
                held.insert((workflow, step), seq);
            }
            "checkpoint_decided" => {
                decided.insert((workflow, step), event.checkpoint_status.unwrap_or("?").to_owned());
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{capture, check};
    use serde_json::json;

    /// The hand-made capture of the acceptance criteria: a held step that started anyway.
    #[test]
    fn a_held_step_that_started_and_a_dependent_of_a_partial_step_are_caught() {
        let started = json!({"kind": "workflow_started", "workflow_id": "wf_1", "limits": {"max_concurrency": 6},
            "graph": {"steps": [{"id": "a", "posture": "read_only", "read_set": ["**/*"]}, {"id": "b", "depends_on": ["a"]}]}});
        let capture = capture(
            &[
                ("workflow_event", started),
                ("workflow_event", json!({"kind": "step_scheduled", "workflow_id": "wf_1", "step_id": "a", "wave": 1})),
                (
                    "workflow_event",
                    json!({"kind": "checkpoint_decided", "workflow_id": "wf_1", "step_id": "a", "checkpoint_status": "partial"}),
                ),
                ("workflow_event", json!({"kind": "step_held", "workflow_id": "wf_1", "step_id": "b"})),
                ("workflow_event", json!({"kind": "step_scheduled", "workflow_id": "wf_1", "step_id": "b", "wave": 2})),
            ],
            &[],
        );
        assert_eq!(
            check(INVARIANT, &capture),
            [
                "workflow wf_1 starts b at seq 4 while its dependency a is partial",
                "workflow wf_1 starts b at seq 4, held at seq 3",
            ]
        );
    }
}
