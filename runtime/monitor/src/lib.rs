//! The lifecycle monitor: readiness and completion of a turn judged from outside, from a timed
//! stream of terminal-UI observations (houmao's contract; seed 002, reference
//! monitor-and-normalization.md part A).
//!
//! # Brief overview
//!
//! - [`Observation`] ([`surface`]): one parsed snapshot of the screen.
//! - [`kernel`]: classification by priority, post-submit evidence, and the [`kernel::Reducer`]
//!   that folds observations and timer firings into snapshots.
//! - [`Monitor`]: virtual time and the two timers (stall and stability), then the mapping of
//!   snapshots to results with accumulated anomalies.
//!
//! Time is virtual and explicit: [`Step::at_ms`] first fires every timer due at or before it
//! (MON-TIMER-ORDER), then the observation, if any, is classified. The same steps always give
//! the same [`Record`]s, which are the adapter protocol's output lines (docs/adapters.md).

pub mod kernel;
pub mod surface;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use kernel::{Accumulator, Classified, Event, Observed, Reducer, Signature, Snapshot};
pub use kernel::{Evidence, Phase, Status};
pub use surface::{Availability, BusinessState, InputMode, Observation};

/// A monitor's settings; every field has a default (houmao's transport defaults, A.2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Which stream the records show: the monitor's results (default) or every kernel snapshot.
    pub layer: Layer,
    /// How long unknown may last, after the last unknown observation, before `stalled`.
    pub stall_timeout_ms: u64,
    /// How long a completion candidate must keep its signature before `completed`.
    pub stability_ms: u64,
    /// A stalled result ends the run as a failure instead of waiting for recovery.
    pub stalled_is_terminal: bool,
    /// The projection text before submit; post-submit change is measured against it.
    pub baseline: String,
    /// Copied into anomaly details.
    pub parser_family: String,
    /// Completes a turn at once, bypassing the stability window, when the raw output shows it.
    pub completion_observer: Option<CompletionObserver>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            layer: Layer::Monitor,
            stall_timeout_ms: 30_000,
            stability_ms: 1_000,
            stalled_is_terminal: false,
            baseline: String::new(),
            parser_family: "codex_shadow".to_owned(),
            completion_observer: None,
        }
    }
}

impl Config {
    /// Both timers must be positive, as upstream requires.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.stall_timeout_ms == 0 {
            return Err(ConfigError::ZeroStallTimeout);
        }
        if self.stability_ms == 0 {
            return Err(ConfigError::ZeroStability);
        }
        Ok(())
    }
}

/// A [`Config`] the monitor refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// `stall_timeout_ms` is 0.
    ZeroStallTimeout,
    /// `stability_ms` is 0.
    ZeroStability,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfigError::ZeroStallTimeout => "stall_timeout_ms must be greater than 0",
            ConfigError::ZeroStability => "stability_ms must be greater than 0",
        })
    }
}

impl std::error::Error for ConfigError {}

/// Which stream a run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The results a caller sees: `ready`, `completed`, `blocked`, `failed`, `stalled`.
    #[default]
    Monitor,
    /// Every kernel snapshot, non-terminal classifications included.
    Kernel,
}

/// The mailbox completion observer: a definitive answer in the raw output completes the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CompletionObserver {
    /// The raw output holds a definitive answer when it contains this text; the payload is
    /// `{"mail_result_surfaces": [<raw output>]}`.
    pub sentinel: String,
}

/// One timed step: advance the clock to `at_ms`, then observe, if there is an observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Virtual milliseconds since the start of the run; never decreasing.
    pub at_ms: u64,
    /// What the parser saw; absent for a bare advance of the clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<Observation>,
}

/// One output line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Record {
    /// A monitor result (layer `monitor`).
    Result(ResultRecord),
    /// A kernel snapshot (layer `kernel`).
    Snapshot(SnapshotRecord),
}

/// A monitor result: what a caller of the monitor is told.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRecord {
    /// The index of the step during which it was emitted.
    pub step: usize,
    /// When it was emitted.
    pub at_ms: u64,
    /// `ready`, `completed`, `blocked`, `failed` or `stalled`.
    pub status: Status,
    /// The time of the observation it is about.
    pub observed_at_ms: u64,
    /// Every anomaly of the run so far (MON-ANOMALIES).
    pub anomalies: Vec<Anomaly>,
    /// Stalled: time since the first unknown observation of the unknown run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_unknown_ms: Option<u64>,
    /// Stalled: time since entering stalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_stalled_ms: Option<u64>,
    /// Completed by the observer: its payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_payload: Option<Value>,
}

/// A kernel snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotRecord {
    /// The index of the step during which it was emitted.
    pub step: usize,
    /// When it was emitted.
    pub at_ms: u64,
    /// The classification.
    pub status: Status,
    /// The time of the observation it is about.
    pub observed_at_ms: u64,
    /// Time since the first unknown observation of the unknown run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_elapsed_ms: Option<u64>,
    /// Time since entering stalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_stalled_ms: Option<u64>,
    /// This snapshot entered stalled.
    pub entered_stalled: bool,
    /// This snapshot left stalled.
    pub recovered_from_stalled: bool,
    /// What it recovered to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered_to: Option<String>,
    /// Completion: time since the candidate signature was first seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_elapsed_ms: Option<u64>,
    /// Completion: the post-submit evidence.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

/// Something the run noticed; anomalies accumulate and every later result carries them all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anomaly {
    /// What happened.
    pub code: AnomalyCode,
    /// A sentence for people.
    pub message: String,
    /// `phase`, `parser_family`, and the elapsed seconds or the state recovered to.
    pub details: BTreeMap<String, String>,
}

/// The anomaly vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyCode {
    /// Unknown lasted past the stall timeout.
    StalledEntered,
    /// A known state came back after stalled.
    StalledRecovered,
}

/// A timer waiting to fire; at most one of each kind is armed (the upstream `switch_latest`).
#[derive(Debug, Clone)]
struct Timer {
    due_ms: u64,
    event: Event,
}

/// The reference monitor for one phase.
#[derive(Debug, Clone)]
pub struct Monitor {
    phase: Phase,
    config: Config,
    reducer: Reducer,
    accumulator: Accumulator,
    last_signature: Option<Signature>,
    stall: Option<Timer>,
    stability: Option<Timer>,
    anomalies: Vec<Anomaly>,
    finished: bool,
}

impl Monitor {
    /// A monitor at time 0 with nothing observed.
    pub fn new(phase: Phase, config: Config) -> Monitor {
        Monitor {
            phase,
            reducer: Reducer::new(phase),
            accumulator: Accumulator::new(&config.baseline),
            config,
            last_signature: None,
            stall: None,
            stability: None,
            anomalies: Vec::new(),
            finished: false,
        }
    }

    /// The records step `step_idx` produces: first every timer due at or before `at_ms`, in
    /// due order (MON-TIMER-ORDER), then the observation's.
    pub fn apply(&mut self, step_idx: usize, step: &Step) -> Vec<Record> {
        let mut records = Vec::new();
        while !self.finished
            && let Some(event) = self.next_due(step.at_ms)
        {
            self.emit(step_idx, event, &mut records);
        }
        if let Some(observation) = &step.observe
            && !self.finished
        {
            let observed = Observed { at_ms: step.at_ms, observation: observation.clone() };
            let classified = self.classify(observed);
            self.arm(&classified);
            self.emit(step_idx, Event::Observation(classified), &mut records);
        }
        records
    }

    fn classify(&mut self, observed: Observed) -> Classified {
        match self.phase {
            Phase::Readiness => kernel::classify_readiness(observed),
            Phase::Completion => {
                let (evidence, key) = self.accumulator.add(&observed.observation, &self.config.baseline);
                kernel::classify_completion(observed, evidence, key)
            }
        }
    }

    /// Every classification re-arms or cancels the stall timer, so it follows the last unknown
    /// observation (MON-STALL-TIMER); only a change of signature re-arms or cancels the
    /// stability timer, so identical candidates do not restart it (MON-STABILITY-WINDOW).
    fn arm(&mut self, classified: &Classified) {
        let at_ms = classified.observed.at_ms;
        self.stall = (classified.status == Status::Unknown).then(|| {
            let due_ms = at_ms.saturating_add(self.config.stall_timeout_ms);
            Timer { due_ms, event: Event::Stall { at_ms: due_ms, armed_by: classified.observed.clone() } }
        });
        if self.phase == Phase::Completion && classified.signature != self.last_signature {
            self.last_signature.clone_from(&classified.signature);
            self.stability = match (&classified.signature, classified.status) {
                (Some(signature), Status::CandidateComplete) => {
                    let due_ms = at_ms.saturating_add(self.config.stability_ms);
                    Some(Timer { due_ms, event: Event::Stability { at_ms: due_ms, signature: signature.clone() } })
                }
                _ => None,
            };
        }
    }

    /// Takes the timer due at or before `until`, if one is. At most one is ever pending, so
    /// they fire in due order (MON-TIMER-ORDER) without ordering them: only an unknown
    /// observation arms the stall timer, and its signature, never a candidate's, cancels the
    /// stability timer; every other observation cancels the stall timer ([`Monitor::arm`]).
    fn next_due(&mut self, until: u64) -> Option<Event> {
        debug_assert!(self.stall.is_none() || self.stability.is_none(), "both timers pending");
        let due = |timer: &mut Timer| timer.due_ms <= until;
        self.stall.take_if(due).or_else(|| self.stability.take_if(due)).map(|timer| timer.event)
    }

    fn emit(&mut self, step: usize, event: Event, records: &mut Vec<Record>) {
        let at_ms = match &event {
            Event::Observation(classified) => classified.observed.at_ms,
            Event::Stall { at_ms, .. } | Event::Stability { at_ms, .. } => *at_ms,
        };
        let Some(snapshot) = self.reducer.reduce(event) else { return };
        match self.config.layer {
            Layer::Kernel => records.push(Record::Snapshot(snapshot_record(step, at_ms, &snapshot))),
            Layer::Monitor => {
                self.note_anomalies(&snapshot);
                if let Some(result) = self.result(step, at_ms, &snapshot) {
                    // MON-STALLED-TERMINAL: a terminal stall is the run's last word.
                    self.finished = result.status == Status::Stalled && self.config.stalled_is_terminal;
                    records.push(Record::Result(result));
                }
            }
        }
    }

    /// MON-ANOMALIES: entering and leaving stalled are recorded, once per snapshot that does.
    fn note_anomalies(&mut self, snapshot: &Snapshot) {
        let mut details = BTreeMap::from([
            ("phase".to_owned(), self.phase.as_str().to_owned()),
            ("parser_family".to_owned(), self.config.parser_family.clone()),
        ]);
        if snapshot.entered_stalled {
            details.insert("elapsed_unknown_seconds".to_owned(), seconds(snapshot.unknown_elapsed_ms.unwrap_or(0)));
            self.anomalies.push(Anomaly {
                code: AnomalyCode::StalledEntered,
                message: "the surface stayed unknown past the stall timeout".to_owned(),
                details,
            });
        } else if snapshot.recovered_from_stalled {
            details.insert("elapsed_stalled_seconds".to_owned(), seconds(snapshot.elapsed_stalled_ms.unwrap_or(0)));
            details.insert("recovered_to".to_owned(), snapshot.recovered_to.clone().unwrap_or_default());
            self.anomalies.push(Anomaly {
                code: AnomalyCode::StalledRecovered,
                message: "a known state came back after stalled".to_owned(),
                details,
            });
        }
    }

    /// The result a snapshot gives, if any (A.2.5): the completion observer first (it beats
    /// every status), then the terminal classifications; `waiting`, `unknown`, `in_progress`
    /// and `candidate_complete` give nothing.
    fn result(&self, step: usize, at_ms: u64, snapshot: &Snapshot) -> Option<ResultRecord> {
        let result = |status: Status| ResultRecord {
            step,
            at_ms,
            status,
            observed_at_ms: snapshot.observed.at_ms,
            anomalies: self.anomalies.clone(),
            elapsed_unknown_ms: None,
            elapsed_stalled_ms: None,
            completion_payload: None,
        };
        if let Some(payload) = self.observer_payload(snapshot) {
            return Some(ResultRecord { completion_payload: Some(payload), ..result(Status::Completed) });
        }
        match snapshot.status {
            Status::Ready | Status::Completed | Status::Blocked | Status::Failed => Some(result(snapshot.status)),
            Status::Stalled => Some(ResultRecord {
                elapsed_unknown_ms: Some(snapshot.unknown_elapsed_ms.unwrap_or(0)),
                elapsed_stalled_ms: snapshot.elapsed_stalled_ms,
                ..result(Status::Stalled)
            }),
            Status::Waiting | Status::Unknown | Status::InProgress | Status::CandidateComplete => None,
        }
    }

    /// The observer runs only once post-submit activity was seen.
    fn observer_payload(&self, snapshot: &Snapshot) -> Option<Value> {
        let observer = self.config.completion_observer.as_ref()?;
        let evidence = snapshot.evidence?;
        if !(evidence.saw_working || evidence.saw_projection_change) {
            return None;
        }
        let raw = snapshot.observed.observation.raw(&self.config.baseline);
        raw.contains(&observer.sentinel).then(|| serde_json::json!({ "mail_result_surfaces": [raw] }))
    }
}

fn snapshot_record(step: usize, at_ms: u64, snapshot: &Snapshot) -> SnapshotRecord {
    SnapshotRecord {
        step,
        at_ms,
        status: snapshot.status,
        observed_at_ms: snapshot.observed.at_ms,
        unknown_elapsed_ms: snapshot.unknown_elapsed_ms,
        elapsed_stalled_ms: snapshot.elapsed_stalled_ms,
        entered_stalled: snapshot.entered_stalled,
        recovered_from_stalled: snapshot.recovered_from_stalled,
        recovered_to: snapshot.recovered_to.clone(),
        candidate_elapsed_ms: snapshot.candidate_elapsed_ms,
        evidence: snapshot.evidence,
    }
}

/// Milliseconds as seconds with at most three decimals and no trailing zeros (`5000` is `"5"`,
/// `1500` is `"1.5"`), the form upstream anomaly details use.
pub fn seconds(ms: u64) -> String {
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observe(at_ms: u64, business_state: BusinessState, input_mode: InputMode) -> Step {
        Step {
            at_ms,
            observe: Some(Observation {
                availability: if business_state == BusinessState::Unknown {
                    Availability::Unknown
                } else {
                    Availability::Supported
                },
                business_state,
                input_mode,
                ui_context: "normal_prompt".to_owned(),
                projection_text: None,
                baseline_invalidated: false,
                raw_output: None,
            }),
        }
    }

    fn statuses(phase: Phase, config: Config, steps: &[Step]) -> Vec<(u64, Status)> {
        let mut monitor = Monitor::new(phase, config);
        let mut seen = Vec::new();
        for (idx, step) in steps.iter().enumerate() {
            for record in monitor.apply(idx, step) {
                match record {
                    Record::Result(result) => seen.push((result.at_ms, result.status)),
                    Record::Snapshot(snapshot) => seen.push((snapshot.at_ms, snapshot.status)),
                }
            }
        }
        seen
    }

    #[test]
    fn the_stall_timer_follows_the_last_unknown_observation() {
        let config = Config { stall_timeout_ms: 5000, ..Config::default() };
        let steps = [
            observe(0, BusinessState::Unknown, InputMode::Unknown),
            observe(4000, BusinessState::Unknown, InputMode::Unknown),
            Step { at_ms: 8900, observe: None },
            Step { at_ms: 9000, observe: None },
        ];
        assert_eq!(statuses(Phase::Readiness, config, &steps), [(9000, Status::Stalled)]);
    }

    #[test]
    fn a_timer_due_at_an_observation_fires_before_it() {
        let config = Config { stall_timeout_ms: 5000, ..Config::default() };
        let steps = [
            observe(0, BusinessState::Unknown, InputMode::Unknown),
            observe(5000, BusinessState::Idle, InputMode::Freeform),
        ];
        assert_eq!(statuses(Phase::Readiness, config, &steps), [(5000, Status::Stalled), (5000, Status::Ready)]);
    }

    #[test]
    fn a_terminal_stall_ends_the_run() {
        let config = Config { stall_timeout_ms: 1000, stalled_is_terminal: true, ..Config::default() };
        let steps = [
            observe(0, BusinessState::Unknown, InputMode::Unknown),
            observe(2000, BusinessState::Idle, InputMode::Freeform),
        ];
        assert_eq!(statuses(Phase::Readiness, config, &steps), [(1000, Status::Stalled)]);
    }

    #[test]
    fn completion_waits_out_the_stability_window() {
        let config = Config { stability_ms: 1000, ..Config::default() };
        let steps = [
            observe(0, BusinessState::Working, InputMode::Freeform),
            observe(500, BusinessState::Idle, InputMode::Freeform),
            observe(1000, BusinessState::Idle, InputMode::Freeform),
            Step { at_ms: 1499, observe: None },
            Step { at_ms: 1500, observe: None },
        ];
        assert_eq!(statuses(Phase::Completion, config, &steps), [(1500, Status::Completed)]);
    }

    #[test]
    fn seconds_are_formatted_like_upstream_details() {
        assert_eq!(seconds(5000), "5");
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(1500), "1.5");
        assert_eq!(seconds(9), "0.009");
    }

    #[test]
    fn a_zero_timer_is_refused_by_name() {
        assert_eq!(Config::default().validate(), Ok(()));
        let error = Config { stall_timeout_ms: 0, ..Config::default() }.validate().unwrap_err();
        assert_eq!(
            (error, error.to_string().as_str()),
            (ConfigError::ZeroStallTimeout, "stall_timeout_ms must be greater than 0")
        );
        let error = Config { stability_ms: 0, ..Config::default() }.validate().unwrap_err();
        assert_eq!(
            (error, error.to_string().as_str()),
            (ConfigError::ZeroStability, "stability_ms must be greater than 0")
        );
    }
}
