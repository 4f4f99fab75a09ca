//! One wave of a run: its steps scheduled and started as Subagents, then awaited until each
//! has ended or the workflow's deadline has passed, which closes the ones still running
//! (WF-TIMEOUT). Which steps make a wave is the planner's ([`super::plan`], WF-WAVES).

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::result::StepOutcome;
use super::spec::{Spec, Step};
use super::spine;
use crate::event::SubagentStatus;
use crate::log::LogError;
use crate::session::Session;
use crate::subagents::{ChildSpec, Subagents};

/// The steps of one wave, as they run.
#[derive(Debug)]
pub(super) struct Wave {
    /// Its place in the run, from 1.
    number: usize,
    /// The planned steps, in spec order.
    pub steps: Vec<String>,
    /// Each started step and its Subagent id.
    running: Vec<(String, String)>,
    /// The steps the workflow's timeout closed.
    closed_by_timeout: Vec<String>,
}

impl Wave {
    /// Schedules each step and starts its Subagent, one step after another: `step_scheduled`,
    /// then the child's `queued` and `started`. `outcomes` hold the summaries of the steps
    /// decided so far, which a step's prompt hands on from its dependencies.
    pub fn start(
        subagents: &mut Subagents,
        session: &mut Session,
        spec: &Spec,
        number: usize,
        steps: Vec<String>,
        outcomes: &BTreeMap<String, StepOutcome>,
    ) -> Result<Wave, LogError> {
        let mut running = Vec::new();
        for step_id in &steps {
            let Some(step) = spec.step(step_id) else { continue };
            spine::scheduled(session, &spec.id, step, number)?;
            let child = ChildSpec {
                session_id: format!("{}-{}", spec.id, step.id),
                agent: step.agent.clone(),
                task: step.task.clone(),
                prompt: prompt(spec, step, outcomes),
                timeout_ms: step.timeout_ms,
            };
            let subagent_id = subagents.launch_child(session, child)?;
            running.push((step.id.clone(), subagent_id));
        }
        Ok(Wave { number, steps, running, closed_by_timeout: Vec::new() })
    }

    /// Waits until every step's Subagent has ended: `Ok(false)` when the workflow's
    /// `deadline` passed first, once the ones still running are closed (WF-TIMEOUT).
    pub async fn wait(
        &mut self,
        subagents: &mut Subagents,
        session: &mut Session,
        deadline: Instant,
    ) -> Result<bool, LogError> {
        let ids: Vec<String> = self.running.iter().map(|(_, subagent_id)| subagent_id.clone()).collect();
        if subagents.wait_terminal(session, &ids, deadline).await? {
            return Ok(true);
        }
        for (step_id, subagent_id) in &self.running {
            let live = subagents.status(subagent_id).is_some_and(|status| !status.is_terminal());
            if live {
                subagents.close_running(session, subagent_id, "closed_by_workflow_timeout").await?;
                // The child's own timeout may fall due at the deadline and win the race: it is
                // then `timed_out` by itself, not closed by the workflow (WF-TIMEOUT).
                if subagents.status(subagent_id) == Some(SubagentStatus::Cancelled) {
                    self.closed_by_timeout.push(step_id.clone());
                }
            }
        }
        Ok(false)
    }

    /// Each started step's outcome, in spec order, from its Subagent's last lifecycle event.
    pub fn outcomes(&self, subagents: &Subagents, spec: &Spec) -> Vec<StepOutcome> {
        self.running
            .iter()
            .map(|(step_id, subagent_id)| {
                let last = subagents.last_event(subagent_id).cloned().unwrap_or_default();
                let by_workflow = self.closed_by_timeout.contains(step_id);
                StepOutcome::ran(spec, step_id, self.number, subagent_id, &last, by_workflow)
            })
            .collect()
    }
}

/// What a step's Subagent is asked: the task, the output contract that lets it declare a
/// checkpoint not ready (WF-CHECKPOINT), and its dependencies' summaries.
fn prompt(spec: &Spec, step: &Step, outcomes: &BTreeMap<String, StepOutcome>) -> String {
    let mut prompt = format!("Workflow: {}\nStep: {}\n\nTask:\n{}", spec.name, step.id, step.task);
    prompt.push_str(
        "\n\nOutput contract: end with a concise summary. If the result is not safe for dependent \
         steps, say `checkpoint_status: partial`, or `checkpoint_status: needs_orchestrator` when a \
         decision is needed.",
    );
    if !step.depends_on.is_empty() {
        prompt.push_str("\n\nDependency results:");
        for dep in &step.depends_on {
            let summary = outcomes.get(dep).map(|outcome| outcome.summary.as_str()).unwrap_or_default();
            prompt.push_str(&format!("\n- {dep}: {summary}"));
        }
    }
    prompt
}
