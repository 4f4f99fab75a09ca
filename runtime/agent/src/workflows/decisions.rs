//! What a run has decided so far: the waves it started and each step's outcome, held or
//! derived from its Subagent (WF-CHECKPOINT, WF-HELD). Each decision is recorded in the spine
//! before it counts, and the planner reads the decisions, so a dependent starts only after
//! its dependencies were decided `checkpoint_ready` (WF-DEPENDENTS-READY).

use std::collections::BTreeMap;

use super::checkpoint::CheckpointStatus;
use super::plan;
use super::result::StepOutcome;
use super::spec::Spec;
use super::spine;
use super::wave::Wave;
use crate::log::LogError;
use crate::session::Session;
use crate::subagents::Subagents;

/// The run's decisions, as the planner and the result read them.
#[derive(Debug, Default)]
pub(super) struct Decisions {
    /// The steps of each started wave, in order.
    waves: Vec<Vec<String>>,
    /// Each decided step's checkpoint status.
    decided: BTreeMap<String, CheckpointStatus>,
    /// Each decided step's outcome.
    outcomes: BTreeMap<String, StepOutcome>,
}

impl Decisions {
    /// The steps of each started wave, in order.
    pub fn waves(&self) -> &[Vec<String>] {
        &self.waves
    }

    /// The outcomes decided so far, by step.
    pub fn outcomes(&self) -> &BTreeMap<String, StepOutcome> {
        &self.outcomes
    }

    /// The decided outcomes in spec order.
    pub fn in_spec_order(&self, spec: &Spec) -> Vec<StepOutcome> {
        spec.steps.iter().filter_map(|step| self.outcomes.get(&step.id).cloned()).collect()
    }

    /// The steps the next wave starts (WF-WAVES); none when nothing more can start.
    pub fn next_wave(&self, spec: &Spec) -> Vec<String> {
        plan::next_wave(spec, &self.decided, &self.waves.concat())
    }

    /// Holds each step that can never start because a dependency was decided other than
    /// `checkpoint_ready`, until none is left: a held step holds its dependents (WF-HELD).
    pub fn hold_blocked(&mut self, session: &mut Session, spec: &Spec) -> Result<(), LogError> {
        let started = self.waves.concat();
        loop {
            let blocked = plan::blocked(spec, &self.decided, &started);
            if blocked.is_empty() {
                return Ok(());
            }
            for step_id in blocked {
                self.hold(session, spec, &step_id, "dependency_not_checkpoint_ready", false)?;
            }
        }
    }

    /// Decides each step of a wave that has ended, from its Subagent (WF-CHECKPOINT).
    pub fn decide(
        &mut self,
        session: &mut Session,
        spec: &Spec,
        subagents: &Subagents,
        wave: Wave,
    ) -> Result<(), LogError> {
        for outcome in wave.outcomes(subagents, spec) {
            spine::decided(session, &spec.id, &outcome)?;
            self.insert(outcome);
        }
        self.waves.push(wave.steps);
        Ok(())
    }

    /// Holds every step not decided yet: the workflow ran out of time (WF-TIMEOUT).
    pub fn hold_rest(&mut self, session: &mut Session, spec: &Spec) -> Result<(), LogError> {
        let pending: Vec<String> =
            spec.steps.iter().filter(|step| !self.decided.contains_key(&step.id)).map(|step| step.id.clone()).collect();
        for step_id in pending {
            self.hold(session, spec, &step_id, "workflow_timeout", true)?;
        }
        Ok(())
    }

    fn hold(
        &mut self,
        session: &mut Session,
        spec: &Spec,
        step_id: &str,
        reason: &str,
        timed_out: bool,
    ) -> Result<(), LogError> {
        spine::held(session, &spec.id, step_id, reason)?;
        self.insert(StepOutcome::held(spec, step_id, reason, timed_out));
        Ok(())
    }

    fn insert(&mut self, outcome: StepOutcome) {
        self.decided.insert(outcome.step_id.clone(), outcome.checkpoint_status);
        self.outcomes.insert(outcome.step_id.clone(), outcome);
    }
}
