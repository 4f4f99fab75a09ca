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
    /// gauntlet was stopped (SIGINT, SIGTERM) before the scenario finished: not judged, and
    /// neither passing nor failing.
    Interrupted,
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
            VerdictKind::Interrupted => "interrupted",
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

/// Where in a run an agent behaviour shows, when a rule can say. The findings at one place are
/// one behaviour and so one finding: an agent that answers a failed turn `end_turn` breaks
/// ACP-STOP-REASON, ACP-FAILURE-IS-ERROR and WIRE-TERMINAL-EVENT-REQUIRED with one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// Turn N of the root Session (1-based, as findings number turns): how it was answered and
    /// shown, how often its text was streamed, and how it was kept (replayed to the model, or
    /// by `session/load`).
    Turn(usize),
    /// The `session/load` replay as a whole: refused, or not the conversation shown live.
    Load,
}

/// One violation a rule saw: its evidence, and where in the run the behaviour shows, when the
/// rule can say (the violations of several rules at one place are one finding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where it shows.
    pub at: Option<At>,
    /// What does not hold, and the evidence.
    pub message: String,
    /// The requirement it breaks, when its rule checks more than one from one reading (one of
    /// the rule's `also`); `None`, the rule's own.
    pub requirement: Option<&'static str>,
}

impl Violation {
    /// A violation at turn `n` (1-based) of the root Session.
    pub fn in_turn(n: usize, message: String) -> Violation {
        Violation::placed(Some(At::Turn(n)), message)
    }

    /// A violation at `at`, when the rule can say.
    pub fn placed(at: Option<At>, message: String) -> Violation {
        Violation { at, message, requirement: None }
    }

    /// A violation in the `session/load` replay.
    pub fn in_load(message: String) -> Violation {
        Violation { at: Some(At::Load), message, requirement: None }
    }

    /// A violation whose place the rule cannot say.
    pub fn new(message: String) -> Violation {
        Violation { at: None, message, requirement: None }
    }

    /// The same violation, its message after `prefix` (what it was found in).
    pub fn in_context(self, prefix: &str) -> Violation {
        Violation { message: format!("{prefix}{}", self.message), ..self }
    }

    /// The same violation, of requirement `id` (one of its rule's `also`).
    pub fn of(self, id: &'static str) -> Violation {
        Violation { requirement: Some(id), ..self }
    }

    /// The messages of a rule that places nothing.
    pub fn unplaced(messages: Vec<String>) -> Vec<Violation> {
        messages.into_iter().map(Violation::new).collect()
    }
}

/// One thing that does not hold, with its evidence: one agent behaviour, naming every
/// requirement it breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// The layer that found it.
    pub layer: Layer,
    /// The requirement id from docs/contract.md, when there is one: of the requirements the
    /// behaviour breaks, the strongest.
    pub requirement: Option<String>,
    /// What does not hold, and the evidence.
    pub message: String,
    /// Where the behaviour shows, when the rule says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<At>,
    /// The other requirements the same behaviour breaks, strongest first, each with its own
    /// evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Breach>,
}

/// A further requirement one behaviour breaks, and what its rule saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Breach {
    /// The requirement id.
    pub requirement: String,
    /// What its rule saw.
    pub message: String,
}

impl Finding {
    /// A finding of `layer` against `requirement`.
    pub fn new(layer: Layer, requirement: Option<&str>, message: impl Into<String>) -> Finding {
        Finding {
            layer,
            requirement: requirement.map(str::to_owned),
            message: message.into(),
            at: None,
            also: Vec::new(),
        }
    }

    /// The same finding, placed.
    pub fn at(self, at: Option<At>) -> Finding {
        Finding { at, ..self }
    }

    /// What the rule of requirement `id` saw, if the behaviour breaks it.
    pub fn evidence_for(&self, id: &str) -> Option<&str> {
        if self.requirement.as_deref() == Some(id) {
            return Some(&self.message);
        }
        self.also.iter().find(|breach| breach.requirement == id).map(|breach| breach.message.as_str())
    }

    /// Every requirement the behaviour breaks, the strongest first.
    pub fn requirements(&self) -> impl Iterator<Item = &str> {
        self.requirement.as_deref().into_iter().chain(self.also.iter().map(|breach| breach.requirement.as_str()))
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
        // Each requirement with its tier, so a reader tells a lie against a published sentence
        // (MUST) from advice (SHOULD) and from the reference's own choice (MAY).
        let named: Vec<String> = self.requirements().map(contract::with_tier).collect();
        match named.is_empty() {
            true => write!(f, "[{layer}] {}", self.message),
            false => write!(f, "[{layer} {}] {}", named.join(" + "), self.message),
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
    /// Why the scenario was not judged, when it was not: skipped, or interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Verdict {
    /// Derives the verdict kind from findings: faults beat invariant and expectation failures,
    /// which beat differences from the reference (golden, or a MAY requirement).
    /// Findings at one place are one behaviour's, and become one finding ([`one_per_behaviour`]).
    pub fn from_findings(scenario: &str, terminal_states: Vec<String>, findings: Vec<Finding>) -> Verdict {
        let mut findings = one_per_behaviour(findings);
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

    /// A scenario gauntlet was stopped before it finished, and how (`SIGTERM`).
    pub fn interrupted(scenario: &str, by: &str) -> Verdict {
        let why = format!("gauntlet was stopped by {by} before this scenario finished: not judged");
        Verdict { kind: VerdictKind::Interrupted, ..Verdict::skipped(scenario, why) }
    }
}

/// Adds `more` to a rule's evidence at one place, unless it says it already.
fn join(message: &mut String, more: &str) {
    if !message.contains(more) {
        message.push_str("; ");
        message.push_str(more);
    }
}

/// How binding a requirement is, for ordering: MUST first; last, no requirement.
fn strength(requirement: Option<&str>) -> u8 {
    match requirement.and_then(contract::tier_of) {
        Some(Tier::Must) => 0,
        Some(Tier::Should) => 1,
        Some(Tier::May) => 2,
        None => 3,
    }
}

/// Merges the findings of one layer at one place ([`At`]) into one: the strongest requirement's
/// (MUST, then SHOULD, then MAY; the first found among equals) names the finding and gives its
/// message, the others are listed in `also`, once each; what one rule saw several times there
/// is joined into its one message. Findings with no place stay apart.
pub fn one_per_behaviour(findings: Vec<Finding>) -> Vec<Finding> {
    let mut merged: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        let same_place =
            |kept: &&mut Finding| kept.at.is_some() && kept.at == finding.at && kept.layer == finding.layer;
        let Some(kept) = merged.iter_mut().find(same_place) else {
            merged.push(finding);
            continue;
        };
        let (mut stronger, weaker) = if strength(finding.requirement.as_deref()) < strength(kept.requirement.as_deref())
        {
            (finding, kept.clone())
        } else {
            (kept.clone(), finding)
        };
        let first = Breach { requirement: weaker.requirement.unwrap_or_default(), message: weaker.message };
        for breach in std::iter::once(first).chain(weaker.also) {
            if stronger.requirement.as_deref() == Some(breach.requirement.as_str()) {
                join(&mut stronger.message, &breach.message);
            } else if let Some(seen) = stronger.also.iter_mut().find(|seen| seen.requirement == breach.requirement) {
                join(&mut seen.message, &breach.message);
            } else {
                stronger.also.push(breach);
            }
        }
        stronger.also.sort_by_key(|breach| strength(Some(&breach.requirement)));
        *kept = stronger;
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MAY row is the reference's own choice: breaking it is a difference, like a golden one,
    /// and never makes a verdict nonconformant; a MUST or SHOULD finding does.
    #[test]
    fn a_finding_against_a_may_row_is_a_difference_not_a_failure() {
        let may = Finding::new(Layer::Invariant, Some("ACP-ERROR-DATA"), "no data.terminalStatus");
        let should = Finding::new(Layer::Invariant, Some("ACP-ANSWER-SHOWN"), "the answer was cut");
        let golden = Finding::new(Layer::Golden, None, "acp.jsonl differs");
        assert!(may.is_difference() && golden.is_difference() && !should.is_difference());
        assert_eq!(Verdict::from_findings("s", vec![], vec![may.clone()]).kind, VerdictKind::Conformant);
        assert_eq!(Verdict::from_findings("s", vec![], vec![may.clone(), golden]).kind, VerdictKind::Conformant);
        assert_eq!(Verdict::from_findings("s", vec![], vec![may, should]).kind, VerdictKind::Nonconformant);
        let fault = Finding::new(Layer::Fault, None, "crashed");
        assert_eq!(Verdict::from_findings("s", vec![], vec![fault]).kind, VerdictKind::Error);
    }

    /// gemini-cli on turn/partial-then-error: one `end_turn` answer to a failed turn, after
    /// three retries of a response that failed after text, was seven lines under four rules.
    /// It is one finding naming the MUSTs first, then the MAY, each rule's evidence kept once.
    #[test]
    fn the_findings_of_one_turn_are_one_behaviour() {
        let turn =
            |id: &str, message: &str, n: usize| Finding::new(Layer::Invariant, Some(id), message).at(Some(At::Turn(n)));
        let findings = vec![
            turn("ACP-STOP-REASON", "turn 1 was answered end_turn", 1),
            turn("WIRE-NO-RETRY-AFTER-TEXT", "request 2 retried", 1),
            turn("WIRE-NO-RETRY-AFTER-TEXT", "request 3 retried", 1),
            turn("WIRE-TEXT-ONCE", "shown 4 times", 1),
            turn("ACP-FAILURE-IS-ERROR", "as if it had finished", 1),
            turn("ACP-STOP-REASON", "turn 2 was answered end_turn", 2),
            Finding::new(Layer::Invariant, Some("ACP-LOAD-MATCHES-LIVE"), "load refused").at(Some(At::Load)),
            Finding::new(Layer::Invariant, Some("ACP-JSONRPC-ERRORS"), "no parse error"),
            Finding::new(Layer::Invariant, Some("ACP-JSONRPC-ERRORS"), "no parse error again"),
            Finding::new(Layer::Golden, None, "acp.jsonl differs"),
        ];
        let verdict = Verdict::from_findings("s", vec![], findings);
        let first = &verdict.findings[0];
        let named: Vec<&str> = first.requirements().collect();
        assert_eq!(
            named,
            ["ACP-STOP-REASON", "WIRE-TEXT-ONCE", "ACP-FAILURE-IS-ERROR", "WIRE-NO-RETRY-AFTER-TEXT"],
            "{first:#?}"
        );
        assert_eq!(first.message, "turn 1 was answered end_turn");
        assert_eq!(first.also[2].message, "request 2 retried; request 3 retried", "a rule's evidence is joined");
        assert!(first.to_string().starts_with(
            "[invariant ACP-STOP-REASON (MUST) + WIRE-TEXT-ONCE (MUST) + ACP-FAILURE-IS-ERROR (MUST) + WIRE-NO-RETRY-AFTER-TEXT (MAY)] turn 1"
        ));
        let rest: Vec<_> = verdict.findings[1..].iter().map(|finding| finding.requirement.as_deref()).collect();
        assert_eq!(
            rest,
            [
                Some("ACP-STOP-REASON"),
                Some("ACP-LOAD-MATCHES-LIVE"),
                Some("ACP-JSONRPC-ERRORS"),
                Some("ACP-JSONRPC-ERRORS"),
                None
            ],
            "other places, and findings with no place, stay apart"
        );
    }

    /// A weaker rule found first gives way: the finding is named by its strongest requirement.
    #[test]
    fn the_strongest_requirement_names_the_finding() {
        let may = Finding::new(Layer::Invariant, Some("WIRE-NO-RETRY-AFTER-TEXT"), "retried").at(Some(At::Turn(1)));
        let must = Finding::new(Layer::Invariant, Some("ACP-FAILURE-IS-ERROR"), "end_turn").at(Some(At::Turn(1)));
        let verdict = Verdict::from_findings("s", vec![], vec![may, must]);
        assert_eq!(verdict.findings.len(), 1);
        assert_eq!(verdict.findings[0].requirement.as_deref(), Some("ACP-FAILURE-IS-ERROR"));
        assert_eq!(verdict.findings[0].also[0].message, "retried");
        assert_eq!(verdict.kind, VerdictKind::Nonconformant);
    }
}
