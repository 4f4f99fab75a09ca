//! The timing kernel: classifications, the post-submit evidence, and the reducer that turns
//! observations and timer firings into snapshots (reference monitor-and-normalization.md
//! A.2.1 to A.2.4).
//!
//! The reducer is a pure fold. It never reads a clock: every event carries its time, and the
//! [`crate::Monitor`] decides when timers fire.

use serde::Serialize;

use crate::surface::{Availability, BusinessState, InputMode, Observation, normalize_projection_text};

/// Which monitoring phase a pipeline judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before submit: is the surface safe for a prompt?
    Readiness,
    /// After submit: did the turn finish?
    Completion,
}

impl Phase {
    /// The word anomaly details use.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Readiness => "readiness",
            Phase::Completion => "completion",
        }
    }
}

/// A lifecycle classification; the monitor's results use the terminal ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Readiness: a prompt can be submitted.
    Ready,
    /// Nothing decisive yet.
    Waiting,
    /// Completion: the turn is running.
    InProgress,
    /// Completion: ready again after activity, waiting out the stability window.
    CandidateComplete,
    /// Completion: the turn finished.
    Completed,
    /// The tool waits for a human.
    Blocked,
    /// The surface is unusable.
    Failed,
    /// The parser cannot tell; the stall timer runs.
    Unknown,
    /// Unknown for longer than the stall timeout.
    Stalled,
}

/// Evidence that something happened after submit (A.2.4 accumulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Evidence {
    /// A `working` observation was seen.
    pub saw_working: bool,
    /// The normalized projection differed from the baseline.
    pub saw_projection_change: bool,
}

/// The post-submit evidence accumulator; the first `baseline_invalidated` observation freezes
/// the projection key, so later text changes are masked.
#[derive(Debug, Clone)]
pub struct Accumulator {
    baseline_key: String,
    frozen_key: Option<String>,
    evidence: Evidence,
}

impl Accumulator {
    /// Seeded with the baseline projection text.
    pub fn new(baseline: &str) -> Accumulator {
        Accumulator {
            baseline_key: normalize_projection_text(baseline),
            frozen_key: None,
            evidence: Evidence::default(),
        }
    }

    /// Folds one observation in; returns the evidence so far and the effective projection key.
    pub fn add(&mut self, observation: &Observation, baseline: &str) -> (Evidence, String) {
        let key = normalize_projection_text(observation.projection(baseline));
        if observation.baseline_invalidated && self.frozen_key.is_none() {
            self.frozen_key = Some(key.clone());
        }
        let effective = self.frozen_key.clone().unwrap_or(key);
        self.evidence.saw_working |= observation.business_state == BusinessState::Working;
        self.evidence.saw_projection_change |= effective != self.baseline_key;
        (self.evidence, effective)
    }
}

/// What resets the stability window when it changes (`ui_context` is deliberately absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    status: Status,
    surface: (Availability, BusinessState, InputMode),
    projection_key: String,
    evidence: Evidence,
}

/// An observation with its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// When it was observed, in virtual milliseconds.
    pub at_ms: u64,
    /// The observation.
    pub observation: Observation,
}

/// An observation and its classification.
#[derive(Debug, Clone)]
pub struct Classified {
    /// The observation.
    pub observed: Observed,
    /// Its classification.
    pub status: Status,
    /// What a recovery from stalled into this classification is called.
    pub recovered_to: String,
    /// Completion only: the evidence so far.
    pub evidence: Option<Evidence>,
    /// Completion only: the stability signature.
    pub signature: Option<Signature>,
}

/// The head both priority orders share: an unusable surface fails, an operator prompt
/// blocks, an unknown surface runs the stall timer.
fn decisive(observation: &Observation) -> Option<Status> {
    if observation.unusable() {
        Some(Status::Failed)
    } else if observation.operator_blocked() {
        Some(Status::Blocked)
    } else if observation.unknown_for_stall() {
        Some(Status::Unknown)
    } else {
        None
    }
}

/// Readiness priority (A.2.2): failed, blocked, unknown, ready, waiting.
pub fn classify_readiness(observed: Observed) -> Classified {
    let observation = &observed.observation;
    let status =
        decisive(observation).unwrap_or(if observation.submit_ready() { Status::Ready } else { Status::Waiting });
    let recovered_to = observation.label();
    Classified { observed, status, recovered_to, evidence: None, signature: None }
}

/// Completion priority (A.2.4): failed, blocked, unknown, in progress, candidate (ready after
/// post-submit evidence), waiting.
pub fn classify_completion(observed: Observed, evidence: Evidence, projection_key: String) -> Classified {
    let observation = &observed.observation;
    let status = decisive(observation).unwrap_or(if observation.business_state == BusinessState::Working {
        Status::InProgress
    } else if observation.submit_ready() && (evidence.saw_working || evidence.saw_projection_change) {
        Status::CandidateComplete
    } else {
        Status::Waiting
    });
    let recovered_to = match status {
        Status::CandidateComplete => "completed".to_owned(),
        _ => observation.label(),
    };
    let signature = Signature {
        status,
        surface: (observation.availability, observation.business_state, observation.input_mode),
        projection_key,
        evidence,
    };
    Classified { observed, status, recovered_to, evidence: Some(evidence), signature: Some(signature) }
}

/// What the reducer folds.
#[derive(Debug, Clone)]
pub enum Event {
    /// A classified observation.
    Observation(Classified),
    /// The stall timer armed by the last unknown observation fired.
    Stall {
        /// When it fired.
        at_ms: u64,
        /// The observation that armed it.
        armed_by: Observed,
    },
    /// The stability timer armed by a new candidate signature fired.
    Stability {
        /// When it fired.
        at_ms: u64,
        /// The signature it was armed for.
        signature: Signature,
    },
}

/// The reducer's output for one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The observation the snapshot is about (for timers: the one that armed them).
    pub observed: Observed,
    /// The classification.
    pub status: Status,
    /// Time since the first unknown observation of the current unknown run.
    pub unknown_elapsed_ms: Option<u64>,
    /// Time since entering stalled.
    pub elapsed_stalled_ms: Option<u64>,
    /// This snapshot entered stalled.
    pub entered_stalled: bool,
    /// This snapshot left stalled.
    pub recovered_from_stalled: bool,
    /// What it recovered to.
    pub recovered_to: Option<String>,
    /// Completion: time since the current candidate signature was first seen.
    pub candidate_elapsed_ms: Option<u64>,
    /// Completion: the evidence (all false on stall-timer snapshots).
    pub evidence: Option<Evidence>,
}

#[derive(Debug, Clone)]
struct Candidate {
    started_at_ms: u64,
    signature: Signature,
    observed: Observed,
    evidence: Option<Evidence>,
}

/// The reducer's state (A.2.3, A.2.4).
#[derive(Debug, Clone)]
pub struct Reducer {
    phase: Phase,
    unknown_started_at_ms: Option<u64>,
    stalled_started_at_ms: Option<u64>,
    candidate: Option<Candidate>,
    completed_signature: Option<Signature>,
    last: Option<Snapshot>,
}

impl Reducer {
    /// An empty reducer.
    pub fn new(phase: Phase) -> Reducer {
        Reducer {
            phase,
            unknown_started_at_ms: None,
            stalled_started_at_ms: None,
            candidate: None,
            completed_signature: None,
            last: None,
        }
    }

    /// Folds one event; returns the snapshot it emits. An event the reducer ignores re-emits
    /// the previous snapshot, as the upstream scan does (quirks A.2.8 #3, #4).
    pub fn reduce(&mut self, event: Event) -> Option<Snapshot> {
        let snapshot = match event {
            Event::Observation(classified) => Some(self.observe(classified)),
            Event::Stall { at_ms, armed_by } => self.stall(at_ms, armed_by),
            Event::Stability { at_ms, signature } => self.stabilize(at_ms, &signature),
        };
        if let Some(snapshot) = snapshot {
            self.last = Some(snapshot);
        }
        self.last.clone()
    }

    fn observe(&mut self, classified: Classified) -> Snapshot {
        let at_ms = classified.observed.at_ms;
        let mut snapshot = Snapshot {
            observed: classified.observed.clone(),
            status: classified.status,
            unknown_elapsed_ms: None,
            elapsed_stalled_ms: None,
            entered_stalled: false,
            recovered_from_stalled: false,
            recovered_to: None,
            candidate_elapsed_ms: None,
            evidence: classified.evidence,
        };
        if classified.status == Status::Unknown {
            let started = *self.unknown_started_at_ms.get_or_insert(at_ms);
            snapshot.unknown_elapsed_ms = Some(at_ms.saturating_sub(started));
            self.candidate = None;
            self.completed_signature = None;
            if let Some(stalled_at) = self.stalled_started_at_ms {
                snapshot.status = Status::Stalled;
                snapshot.elapsed_stalled_ms = Some(at_ms.saturating_sub(stalled_at));
            }
            return snapshot;
        }
        // A known observation ends any unknown run; leaving stalled is recorded.
        self.unknown_started_at_ms = None;
        if self.stalled_started_at_ms.take().is_some() {
            snapshot.recovered_from_stalled = true;
            snapshot.recovered_to = Some(classified.recovered_to.clone());
        }
        if classified.status != Status::CandidateComplete {
            self.candidate = None;
            self.completed_signature = None;
            return snapshot;
        }
        let signature = classified.signature.clone();
        let fresh = match (&self.candidate, &signature) {
            (Some(candidate), Some(signature)) => candidate.signature != *signature,
            _ => true,
        };
        if fresh && let Some(signature) = signature {
            self.candidate = Some(Candidate {
                started_at_ms: at_ms,
                signature,
                observed: classified.observed.clone(),
                evidence: classified.evidence,
            });
            self.completed_signature = None;
        }
        if let Some(candidate) = &self.candidate {
            snapshot.candidate_elapsed_ms = Some(at_ms.saturating_sub(candidate.started_at_ms));
            if self.completed_signature.as_ref() == Some(&candidate.signature) {
                snapshot.status = Status::Completed;
            }
        }
        snapshot
    }

    fn stall(&mut self, at_ms: u64, armed_by: Observed) -> Option<Snapshot> {
        let started = self.unknown_started_at_ms?;
        if self.stalled_started_at_ms.is_some() {
            return None;
        }
        self.stalled_started_at_ms = Some(at_ms);
        self.candidate = None;
        self.completed_signature = None;
        Some(Snapshot {
            observed: armed_by,
            status: Status::Stalled,
            unknown_elapsed_ms: Some(at_ms.saturating_sub(started)),
            elapsed_stalled_ms: Some(0),
            entered_stalled: true,
            recovered_from_stalled: false,
            recovered_to: None,
            candidate_elapsed_ms: None,
            evidence: (self.phase == Phase::Completion).then(Evidence::default),
        })
    }

    fn stabilize(&mut self, at_ms: u64, signature: &Signature) -> Option<Snapshot> {
        let candidate = self.candidate.as_ref().filter(|candidate| candidate.signature == *signature)?;
        let snapshot = Snapshot {
            observed: candidate.observed.clone(),
            status: Status::Completed,
            unknown_elapsed_ms: None,
            elapsed_stalled_ms: None,
            entered_stalled: false,
            recovered_from_stalled: false,
            recovered_to: None,
            candidate_elapsed_ms: Some(at_ms.saturating_sub(candidate.started_at_ms)),
            evidence: candidate.evidence,
        };
        self.completed_signature = Some(signature.clone());
        Some(snapshot)
    }
}
