//! The judge: a Capture against the contract, the scenario and the golden files.
//!
//! Pure: no IO, and every finding is returned, never only the first. The three layers are
//! [`invariants`] (every scenario), [`expectations`] (what the file states), and the golden
//! comparison done by `gauntlet::golden`, whose differences arrive here as findings.
//!
//! This module only orchestrates, at the top of its floors: the [`evidence`] a capture gives,
//! the readings several rules share (`views`, `transcript`, [`conversations`]), the rules
//! ([`turn_rule`], one file each under `invariants/`) and their list ([`invariants`]).

pub mod conversations;
pub mod evidence;
pub mod expectations;
pub(crate) mod fixture;
pub mod invariants;
pub mod lifecycle;
pub(crate) mod transcript;
pub mod turn_rule;
pub mod v1_reading;
pub(crate) mod views;

use crate::capture::Capture;
use crate::scenario::Scenario;
use crate::verdict::{Finding, Layer, Verdict};
use evidence::Evidence;

/// Every finding of the Log-only invariants ([`invariants::log_only`]), each with its rule's
/// name: what can be said of a Log without the run that wrote it (`gauntlet audit`).
pub fn log_findings(evidence: &Evidence) -> Vec<(&'static str, Finding)> {
    invariants::log_only()
        .flat_map(|invariant| invariant.run(evidence).into_iter().map(|finding| (invariant.name, finding)))
        .collect()
}

/// Judges a capture: faults, invariants, expectations, then the golden findings given.
pub fn judge(name: &str, scenario: &Scenario, capture: &Capture, golden: Vec<Finding>) -> Verdict {
    // Read once, for every rule: a v2 transcript as its v1 equivalent.
    let read = v1_reading::of_capture(capture);
    let evidence = Evidence::of_scenario(&read, scenario).with_raw(capture);
    let mut findings: Vec<Finding> =
        capture.faults.iter().map(|fault| Finding::new(Layer::Fault, None, fault.clone())).collect();
    findings.extend(invariants::check_all(&evidence));
    findings.extend(expectations::check(scenario, &evidence));
    findings.extend(golden);
    let states = evidence
        .audit
        .turns
        .iter()
        .map(|turn| turn.terminal_status.map_or("-", |status| status.as_str()).to_owned())
        .collect();
    Verdict::from_findings(name, states, findings)
}
