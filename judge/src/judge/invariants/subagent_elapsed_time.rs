//! SUB-ELAPSED-TIME (SHOULD): a completed Subagent's terminal `subagent_event`, and the Step
//! Outcome of each workflow step that ran, give `elapsed_ms`. Seed 000 (ADR 0026 "Subagent
//! terminal states") asks a `completed` Subagent for "elapsed time when available", seed 001
//! (ADR 0014 "Step Outcome") a step for the same; a runtime has a clock, so gauntlet reads it
//! as always available. The seed's must, summary or checkpoint evidence, is
//! SUB-COMPLETED-EVIDENCE's.

use gauntlet_agent::event::SubagentStatus;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::log::{text, workflow_runs};

pub const INVARIANT: Invariant = Invariant {
    id: "SUB-ELAPSED-TIME",
    also: &[],
    name: "subagent_elapsed_time",
    applies: Scope::Log,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    let events = evidence.lines.iter().filter_map(|line| Some((line.seq, line.subagent_event()?)));
    let completed = events.filter(|(_, event)| event.subagent_status() == Some(SubagentStatus::Completed));
    for (seq, event) in completed.filter(|(_, event)| !event.elapsed_ms.is_some_and(Value::is_u64)) {
        let id = event.subagent_id.unwrap_or("?");
        problems.push(format!("{id} is `completed` at seq {} without `elapsed_ms`", seq.unwrap_or_default()));
    }
    for run in workflow_runs(evidence) {
        let ran = run.steps().iter().filter(|step| step.get("agent_id").is_some_and(|id| !id.is_null()));
        for step in ran.filter(|step| !step.get("elapsed_ms").is_some_and(Value::is_u64)) {
            problems.push(format!("{} step `{}` ran, but has no `elapsed_ms`", run.name(), text(step, "step_id")));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check, failed_workflow};

    #[test]
    fn a_completion_or_a_step_without_elapsed_time_is_caught() {
        let event = |data: Value| ("subagent_event", data);
        let capture = capture(
            &[
                event(json!({"subagent_id": "sub_1", "status": "completed", "summary": "done", "elapsed_ms": 5})),
                event(json!({"subagent_id": "sub_2", "status": "completed", "summary": "done"})),
                event(json!({"subagent_id": "sub_3", "status": "failed"})),
            ],
            &[],
        );
        assert_eq!(check(INVARIANT, &capture), ["sub_2 is `completed` at seq 1 without `elapsed_ms`"]);
        let step = failed_workflow(|result| {
            result["workflow"]["steps"][0].as_object_mut().map(|step| step.remove("elapsed_ms"));
        });
        assert_eq!(check(INVARIANT, &step), ["workflow wf_1 (seq 3) step `a` ran, but has no `elapsed_ms`"]);
    }
}
