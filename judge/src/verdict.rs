//! Verdicts and findings: what the judge concludes about one scenario run.

use serde::{Deserialize, Serialize};

use crate::contract::{self, Tier};

/// The verdict vocabulary (design.md "Three layers of judgement").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Invariants, expectations and golden all hold.
    Identical,
    /// Invariants and expectations hold; the golden differs.
    Conformant,
    /// An invariant or expectation fails.
    Nonconformant,
    /// The run itself failed: a crash, a hang, an unreadable scenario.
    Error,
    /// The scenario needs a capability the implementation lacks.
    Skipped,
}

impl VerdictKind {
    /// The report string.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Identical => "identical",
            VerdictKind::Conformant => "conformant",
            VerdictKind::Nonconformant => "nonconformant",
            VerdictKind::Error => "error",
            VerdictKind::Skipped => "skipped",
        }
    }
}

/// Which layer of judgement produced a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The run could not be judged normally.
    Fault,
    /// A contract rule checked on every scenario.
    Invariant,
    /// What the scenario file states.
    Expectation,
    /// Equality with the golden files.
    Golden,
}

/// One thing that does not hold, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// The layer that found it.
    pub layer: Layer,
    /// The requirement id from docs/contract.md, when there is one.
    pub requirement: Option<String>,
    /// What does not hold, and the evidence.
    pub message: String,
}

impl Finding {
    /// A finding of `layer` against `requirement`.
    pub fn new(layer: Layer, requirement: Option<&str>, message: impl Into<String>) -> Finding {
        Finding { layer, requirement: requirement.map(str::to_owned), message: message.into() }
    }

    /// Whether it says where the implementation differs from the reference rather than where
    /// it breaks the contract: a golden difference, or a finding against a MAY requirement
    /// (the reference's own choice). Such a finding makes a verdict `conformant`, never
    /// `nonconformant`, and is never a known failure to list.
    pub fn is_difference(&self) -> bool {
        match self.layer {
            Layer::Golden => true,
            Layer::Fault => false,
            Layer::Invariant | Layer::Expectation => {
                self.requirement.as_deref().and_then(contract::tier_of) == Some(Tier::May)
            }
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let layer = match self.layer {
            Layer::Fault => "fault",
            Layer::Invariant => "invariant",
            Layer::Expectation => "expectation",
            Layer::Golden => "golden",
        };
        match &self.requirement {
            Some(id) => write!(f, "[{layer} {id}] {}", self.message),
            None => write!(f, "[{layer}] {}", self.message),
        }
    }
}

/// The judgement of one scenario run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The scenario name, e.g. `turn/partial-then-error`.
    pub scenario: String,
    /// The verdict.
    pub kind: VerdictKind,
    /// Each turn's terminal state as derived from the Log (`-` when there is none).
    pub terminal_states: Vec<String>,
    /// Every finding, in layer order.
    pub findings: Vec<Finding>,
    /// Wall time of the run, in milliseconds.
    pub elapsed_ms: u128,
    /// Why the scenario was skipped, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Verdict {
    /// Derives the verdict kind from findings: faults beat invariant and expectation failures,
    /// which beat differences from the reference (golden, or a MAY requirement).
    pub fn from_findings(scenario: &str, terminal_states: Vec<String>, mut findings: Vec<Finding>) -> Verdict {
        findings.sort_by_key(|finding| finding.layer);
        let kind = if findings.iter().any(|finding| finding.layer == Layer::Fault) {
            VerdictKind::Error
        } else if findings.iter().any(|finding| !finding.is_difference()) {
            VerdictKind::Nonconformant
        } else if !findings.is_empty() {
            VerdictKind::Conformant
        } else {
            VerdictKind::Identical
        };
        Verdict { scenario: scenario.to_owned(), kind, terminal_states, findings, elapsed_ms: 0, skipped: None }
    }

    /// A scenario not run, and why (a capability the implementation lacks).
    pub fn skipped(scenario: &str, why: String) -> Verdict {
        Verdict {
            kind: VerdictKind::Skipped,
            skipped: Some(why),
            ..Verdict::from_findings(scenario, Vec::new(), Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MAY row is the reference's own choice: breaking it is a difference, like a golden one,
    /// and never makes a verdict nonconformant; a MUST or SHOULD finding does.
    #[test]
    fn a_finding_against_a_may_row_is_a_difference_not_a_failure() {
        let may = Finding::new(Layer::Invariant, Some("ACP-ERROR-DATA"), "no data.terminalStatus");
        let should = Finding::new(Layer::Invariant, Some("WIRE-RETRY-BOUNDED"), "5 retries");
        let golden = Finding::new(Layer::Golden, None, "acp.jsonl differs");
        assert!(may.is_difference() && golden.is_difference() && !should.is_difference());
        assert_eq!(Verdict::from_findings("s", vec![], vec![may.clone()]).kind, VerdictKind::Conformant);
        assert_eq!(Verdict::from_findings("s", vec![], vec![may.clone(), golden]).kind, VerdictKind::Conformant);
        assert_eq!(Verdict::from_findings("s", vec![], vec![may, should]).kind, VerdictKind::Nonconformant);
        let fault = Finding::new(Layer::Fault, None, "crashed");
        assert_eq!(Verdict::from_findings("s", vec![], vec![fault]).kind, VerdictKind::Error);
    }
}
