//! The judge: a Capture against the contract, the scenario and the golden files.
//!
//! Pure: no IO, and every finding is returned, never only the first. The three layers are
//! [`invariants`] (every scenario), [`expectations`] (what the file states), and the golden
//! comparison done by [`crate::golden`], whose differences arrive here as findings.

pub mod expectations;
pub mod invariants;

use crate::audit::{self, Audit, Line};
use crate::capture::Capture;
use crate::scenario::Scenario;
use crate::verdict::{Finding, Layer, Verdict};

/// A Capture with its Log parsed and audited once, for every check to share.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The raw capture.
    pub capture: &'a Capture,
    /// The readable Log lines.
    pub lines: Vec<Line>,
    /// Terminal states derived from the Log.
    pub audit: Audit,
}

impl<'a> Evidence<'a> {
    /// Parses and audits a capture.
    pub fn new(capture: &'a Capture) -> Evidence<'a> {
        let (lines, _) = audit::parse_lines(&capture.log);
        Evidence { capture, lines, audit: capture.audit() }
    }
}

/// Judges a capture: faults, invariants, expectations, then the golden findings given.
pub fn judge(name: &str, scenario: &Scenario, capture: &Capture, golden: Vec<Finding>) -> Verdict {
    let evidence = Evidence::new(capture);
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
