//! An implementation's expectations file: its known failures, each with a reason.
//!
//! As in WPT's expectation files, a run passes when it fails exactly where the file says: an
//! unlisted failure fails the run, and so does a listed failure that now passes (stale), so the
//! file never hides a fix or a regression. An entry naming a scenario the corpus does not have
//! (removed, renamed, misspelt) can never match: it is stale too. `gauntlet check --update-expectations` rewrites it
//! from a run, keeping the reasons already written, for review.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use gauntlet_judge::contract;
use gauntlet_judge::locate::{self, LoadError};
use gauntlet_judge::verdict::{Finding, Layer, Verdict, VerdictKind};

/// The expectations file of one implementation.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnownFailures {
    /// The known failures, in scenario order.
    #[serde(default, rename = "failure")]
    pub failures: Vec<KnownFailure>,
}

/// One known failure: a whole scenario, or one requirement in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnownFailure {
    /// The scenario name, e.g. `turn/partial-then-error`.
    pub scenario: String,
    /// The requirement id; absent means any failure of the scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// Why it fails, for the reader.
    pub reason: String,
    /// It does not fail on every run (a race inside the implementation, which the reason must
    /// explain): when it passes it is not stale. Use sparingly: it hides a fix until removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
}

/// One failure a run found: a scenario and the requirement of a finding (`None` for a fault or
/// an expectation, which name no requirement), with the other requirements the same behaviour
/// breaks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Failure {
    /// The scenario.
    pub scenario: String,
    /// The requirement, when the finding names one: the strongest its behaviour breaks.
    pub requirement: Option<String>,
    /// The other requirements its behaviour breaks: an entry naming any of them lists it too
    /// (which of equally strong requirements names a behaviour may vary with what else it did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// The first finding's message, as evidence.
    pub message: String,
}

impl Failure {
    /// How the console names it: its requirement with its tier and, when the same behaviour
    /// breaks others, how many (`ACP-TOOL-STATUS (MUST) + 2 more`), so the line alone tells a
    /// lie against a published sentence from advice; a fault or an expectation names none.
    pub fn headline(&self) -> String {
        let Some(id) = &self.requirement else { return "(fault or expectation)".to_owned() };
        match self.also.len() {
            0 => contract::with_tier(id),
            more => format!("{} + {more} more", contract::with_tier(id)),
        }
    }
}

/// A run compared with the expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    /// Failures the file lists.
    pub expected: Vec<Failure>,
    /// Failures it does not list: they fail the run.
    pub unexpected: Vec<Failure>,
    /// Entries no failure matched any more, or that name no scenario of the corpus: they fail
    /// the run until removed.
    pub stale: Vec<Stale>,
}

/// An entry of the expectations file that no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stale {
    /// The entry, as the file has it.
    #[serde(flatten)]
    pub entry: KnownFailure,
    /// Why it no longer holds.
    pub why: Staleness,
}

/// Why an expectation is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Staleness {
    /// Its scenario ran and no failure matched it: the implementation passes now.
    Passes,
    /// No scenario of the corpus has its name (removed, renamed or misspelt): nothing can match it.
    NotInCorpus,
}

impl Staleness {
    /// What the reader of a report is told.
    pub fn describe(self) -> &'static str {
        match self {
            Staleness::Passes => "passes now",
            Staleness::NotInCorpus => "names no scenario of the corpus (removed, renamed or misspelt)",
        }
    }
}

impl KnownFailure {
    fn covers(&self, failure: &Failure) -> bool {
        self.scenario == failure.scenario
            && match &self.requirement {
                None => true,
                Some(id) => failure.requirement.as_ref() == Some(id) || failure.also.contains(id),
            }
    }
}

/// Reads an expectations file; a missing file is an empty one.
pub fn load(path: &Path) -> Result<KnownFailures, LoadError> {
    match std::fs::read_to_string(path) {
        Ok(text) => locate::parse_toml(&text, path),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(KnownFailures::default()),
        Err(source) => Err(LoadError::Io { path: path.to_owned(), source }),
    }
}

/// The expectations file beside a profile: `<profile stem>.expected.toml`.
pub fn path_for(profile: &Path) -> PathBuf {
    let stem = profile.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    profile.with_file_name(format!("{stem}.expected.toml"))
}

/// Every failure of a run: one per (scenario, requirement) of nonconformant and error verdicts,
/// a finding's requirement being the strongest its behaviour breaks.
pub fn failures(verdicts: &[Verdict]) -> Vec<Failure> {
    let mut found: Vec<Failure> = Vec::new();
    for verdict in
        verdicts.iter().filter(|verdict| matches!(verdict.kind, VerdictKind::Nonconformant | VerdictKind::Error))
    {
        // A run that could not be judged normally fails as a whole: its other findings are noise.
        let counted = |finding: &&Finding| match verdict.kind {
            VerdictKind::Error => finding.layer == Layer::Fault,
            _ => !finding.is_difference(),
        };
        for finding in verdict.findings.iter().filter(counted) {
            let also = finding.also.iter().map(|breach| breach.requirement.clone());
            match found
                .iter_mut()
                .find(|seen| seen.scenario == verdict.scenario && seen.requirement == finding.requirement)
            {
                Some(seen) => {
                    seen.also.extend(also);
                    seen.also.sort();
                    seen.also.dedup();
                }
                None => found.push(Failure {
                    scenario: verdict.scenario.clone(),
                    requirement: finding.requirement.clone(),
                    also: also.collect(),
                    message: finding.message.lines().next().unwrap_or_default().to_owned(),
                }),
            }
        }
    }
    found
}

impl KnownFailures {
    /// Sorts a run's failures into expected and unexpected, and finds stale entries: those
    /// naming a scenario outside the `corpus`, and those of a scenario that ran which no failure
    /// matched. Entries for other scenarios outside `ran` (filtered out, skipped, another
    /// shard's) are neither used nor stale.
    pub fn compare(&self, failures: &[Failure], ran: &[String], corpus: &[String]) -> Comparison {
        let mut comparison = Comparison::default();
        for failure in failures {
            if self.failures.iter().any(|known| known.covers(failure)) {
                comparison.expected.push(failure.clone());
            } else {
                comparison.unexpected.push(failure.clone());
            }
        }
        comparison.stale = self
            .failures
            .iter()
            .filter_map(|known| {
                let why = if !corpus.contains(&known.scenario) {
                    Staleness::NotInCorpus
                } else if !known.flaky
                    && ran.contains(&known.scenario)
                    && !failures.iter().any(|failure| known.covers(failure))
                {
                    Staleness::Passes
                } else {
                    return None;
                };
                Some(Stale { entry: known.clone(), why })
            })
            .collect();
        comparison
    }

    /// The file a run implies: an entry per failure, keeping the reasons already written (a
    /// new entry's reason is the finding, to be reviewed and rewritten by a person).
    pub fn updated(&self, failures: &[Failure]) -> KnownFailures {
        let mut entries: Vec<KnownFailure> = failures
            .iter()
            .map(|failure| {
                // The entry for its requirement, else one written for another requirement of the
                // same behaviour (before findings were grouped, or when the strongest varies).
                let listed = self
                    .failures
                    .iter()
                    .find(|known| known.scenario == failure.scenario && known.requirement == failure.requirement)
                    .or_else(|| {
                        self.failures.iter().find(|known| known.requirement.is_some() && known.covers(failure))
                    });
                KnownFailure {
                    scenario: failure.scenario.clone(),
                    requirement: failure.requirement.clone(),
                    reason: listed.map_or_else(|| format!("REVIEW: {}", failure.message), |known| known.reason.clone()),
                    flaky: listed.is_some_and(|known| known.flaky),
                }
            })
            .collect();
        // A flaky entry that passed this time stays: passing is what it sometimes does.
        entries.extend(self.failures.iter().filter(|known| known.flaky).cloned());
        entries.sort();
        entries.dedup();
        KnownFailures { failures: entries }
    }

    /// The file's text, with a header saying what it is.
    pub fn to_toml(&self, implementation: &str) -> String {
        let mut out = format!(
            "# Known failures of {implementation} against the gauntlet corpus: `gauntlet check` passes only when\n\
             # the run fails exactly here. A listed failure that passes is stale and fails the run too.\n\
             # Rewrite with `gauntlet check --impl <profile> --update-expectations`, then review every reason.\n"
        );
        for failure in &self.failures {
            let _ = write!(out, "\n[[failure]]\nscenario = {}\n", toml_string(&failure.scenario));
            if let Some(requirement) = &failure.requirement {
                let _ = writeln!(out, "requirement = {}", toml_string(requirement));
            }
            let _ = writeln!(out, "reason = {}", toml_string(&failure.reason));
            if failure.flaky {
                let _ = writeln!(out, "flaky = true");
            }
        }
        out
    }
}

/// A TOML basic string (JSON string escapes are valid TOML).
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nonconformant(scenario: &str, requirement: &str) -> Verdict {
        Verdict::from_findings(scenario, Vec::new(), vec![Finding::new(Layer::Invariant, Some(requirement), "bad")])
    }

    fn known(scenario: &str, requirement: Option<&str>) -> KnownFailure {
        KnownFailure {
            scenario: scenario.into(),
            requirement: requirement.map(str::to_owned),
            reason: "r".into(),
            flaky: false,
        }
    }

    /// The console names a failure with its tier, the strongest part first and a count of the
    /// rest; a fault names no requirement.
    #[test]
    fn a_headline_says_the_tier_and_how_many_more() {
        let failure = |requirement: Option<&str>, also: &[&str]| Failure {
            scenario: "acp/x".into(),
            requirement: requirement.map(str::to_owned),
            also: also.iter().map(|id| (*id).to_owned()).collect(),
            message: "m".into(),
        };
        assert_eq!(failure(Some("ACP-STOP-REASON"), &[]).headline(), "ACP-STOP-REASON (MUST)");
        let grouped = failure(Some("ACP-STOP-REASON"), &["ACP-FAILURE-IS-ERROR", "WIRE-TERMINAL-EVENT-REQUIRED"]);
        assert_eq!(grouped.headline(), "ACP-STOP-REASON (MUST) + 2 more");
        assert_eq!(failure(None, &[]).headline(), "(fault or expectation)");
    }

    #[test]
    fn a_flaky_entry_that_passes_is_not_stale_and_survives_an_update() {
        let flaky = KnownFailure { flaky: true, ..known("a", Some("R1")) };
        let file = KnownFailures { failures: vec![flaky.clone()] };
        let comparison = file.compare(&[], &["a".to_owned()], &["a".to_owned()]);
        assert!(comparison.stale.is_empty() && comparison.unexpected.is_empty());
        assert_eq!(file.updated(&[]).failures, std::slice::from_ref(&flaky));
        let again = file.updated(&failures(&[nonconformant("a", "R1")]));
        assert_eq!(again.failures, [flaky]);
        assert!(again.to_toml("x").contains("flaky = true"));
    }

    #[test]
    fn unlisted_failures_and_stale_entries_are_both_found() {
        let verdicts = [nonconformant("a", "R1"), nonconformant("b", "R2")];
        let file = KnownFailures { failures: vec![known("a", Some("R1")), known("c", None), known("d", None)] };
        let ran = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let corpus = ["a".to_owned(), "b".to_owned(), "c".to_owned(), "d".to_owned()];
        let comparison = file.compare(&failures(&verdicts), &ran, &corpus);
        assert_eq!(comparison.expected.len(), 1);
        assert_eq!(comparison.unexpected[0].scenario, "b");
        // `c` ran and passed: stale. `d` did not run: neither used nor stale.
        assert_eq!(comparison.stale, [Stale { entry: known("c", None), why: Staleness::Passes }]);
    }

    /// An entry naming a scenario the corpus does not have is stale whether or not the run
    /// (a filtered one, a shard) played anything, and flaky or not: nothing can ever match it.
    #[test]
    fn an_entry_naming_no_scenario_of_the_corpus_is_stale() {
        let gone = KnownFailure { flaky: true, ..known("turn/renamed", Some("R1")) };
        let file = KnownFailures { failures: vec![known("a", None), gone.clone()] };
        let comparison = file.compare(&[], &[], &["a".to_owned()]);
        assert_eq!(comparison.stale, [Stale { entry: gone, why: Staleness::NotInCorpus }]);
        assert!(Staleness::NotInCorpus.describe().contains("no scenario of the corpus"));
    }

    /// A MAY finding beside a real failure is not a failure to list: it cannot fail the run.
    #[test]
    fn a_may_finding_is_never_a_known_failure() {
        let both = Verdict::from_findings(
            "turn/a",
            Vec::new(),
            vec![
                Finding::new(Layer::Invariant, Some("ACP-ERROR-DATA"), "no data"),
                Finding::new(Layer::Invariant, Some("ACP-STOP-REASON"), "end_turn"),
            ],
        );
        let listed: Vec<Option<String>> = failures(&[both]).into_iter().map(|failure| failure.requirement).collect();
        assert_eq!(listed, [Some("ACP-STOP-REASON".to_owned())]);
    }

    /// One behaviour breaking three requirements is one failure: an entry naming any of them
    /// lists it (none is stale), and the updated file keeps one entry for it.
    #[test]
    fn one_behaviour_is_one_failure_whichever_requirement_an_entry_names() {
        use gauntlet_judge::verdict::At;
        let turn = |id: &str| Finding::new(Layer::Invariant, Some(id), id).at(Some(At::Turn(1)));
        let lie = Verdict::from_findings(
            "turn/a",
            Vec::new(),
            vec![turn("WIRE-TERMINAL-EVENT-REQUIRED"), turn("ACP-STOP-REASON"), turn("ACP-FAILURE-IS-ERROR")],
        );
        let found = failures(&[lie]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].requirement.as_deref(), Some("WIRE-TERMINAL-EVENT-REQUIRED"));
        assert_eq!(found[0].also, ["ACP-STOP-REASON", "ACP-FAILURE-IS-ERROR"]);
        let file = KnownFailures {
            failures: vec![known("turn/a", Some("ACP-STOP-REASON")), known("turn/a", Some("ACP-FAILURE-IS-ERROR"))],
        };
        let ran = ["turn/a".to_owned()];
        let comparison = file.compare(&found, &ran, &ran);
        assert!(comparison.unexpected.is_empty() && comparison.stale.is_empty(), "{comparison:?}");
        let updated = file.updated(&found);
        let listed: Vec<_> = updated.failures.iter().map(|known| known.requirement.as_deref()).collect();
        assert_eq!(listed, [Some("WIRE-TERMINAL-EVENT-REQUIRED")]);
        assert_eq!(updated.failures[0].reason, "r", "the reason written for a requirement of the behaviour is kept");
    }

    #[test]
    fn an_entry_without_requirement_covers_the_whole_scenario() {
        let comparison = KnownFailures { failures: vec![known("a", None)] }.compare(
            &failures(&[nonconformant("a", "R9")]),
            &[],
            &["a".to_owned()],
        );
        assert!(comparison.unexpected.is_empty() && comparison.stale.is_empty());
    }

    #[test]
    fn the_updated_file_round_trips_and_keeps_reasons() {
        let file = KnownFailures { failures: vec![known("a", Some("R1"))] };
        let updated = file.updated(&failures(&[nonconformant("a", "R1"), nonconformant("b", "R2")]));
        assert_eq!(updated.failures[0].reason, "r");
        assert_eq!(updated.failures[1].reason, "REVIEW: bad");
        let text = updated.to_toml("x");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.expected.toml");
        std::fs::write(&path, text).unwrap();
        assert_eq!(load(&path).unwrap(), updated);
    }
}
