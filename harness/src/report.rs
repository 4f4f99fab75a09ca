//! Reports over verdicts. Only verdicts, check runs, campaigns and the contract's requirements come in;
//! nothing here runs anything or writes a file.
//!
//! - [`counts`] and [`findings`]: the summary of `gauntlet run` and `gauntlet check`, after
//!   the verdict lines of [`progress`].
//! - [`requirements`]: per-requirement results, as a terminal table.
//! - [`CheckReport`] and [`files`]: a check's report files, one module per format behind the
//!   same `render(&CheckReport)`: [`json`], [`junit`] (for CI systems), [`markdown`].
//! - [`compatibility`]: every checked implementation against every requirement, from their
//!   `report.json`s, on one page.
//! - [`coverage`]: a report against today's corpus: scenarios not checked yet, and out of date.
//! - [`progress`]: verdicts printed as they finish, as lines or JSON.
//! - [`campaign`]: a campaign of generated scenarios, per requirement, with its reproductions.

pub mod campaign;
pub mod compatibility;
pub mod coverage;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod requirements;

use std::path::Path;

use crate::check::CheckRun;
use gauntlet_judge::contract::Requirement;
use gauntlet_judge::verdict::{Verdict, VerdictKind};

/// What a check's report files are made from: the run, its verdicts and the result of each
/// requirement the run was about.
pub struct CheckReport<'a> {
    /// The run.
    pub run: &'a CheckRun,
    /// Its verdicts, in scenario order.
    pub verdicts: Vec<Verdict>,
    /// One row per requirement.
    pub rows: Vec<requirements::Row>,
}

impl<'a> CheckReport<'a> {
    /// The report of `run` over `requirements`; `logged` says whether the implementation keeps
    /// a gauntlet Log (the Log's requirements are not judged on one that does not).
    pub fn new(run: &'a CheckRun, requirements: &[Requirement], logged: bool) -> CheckReport<'a> {
        let verdicts = run.verdicts();
        let rows = requirements::rows(requirements, &verdicts, logged);
        CheckReport { run, verdicts, rows }
    }
}

/// Each report file of a check, by file name: `report.json`, `junit.xml`, `report.md`.
pub fn files(report: &CheckReport<'_>) -> [(&'static str, String); 3] {
    [
        ("report.json", json::render(report)),
        ("junit.xml", junit::render(report)),
        ("report.md", markdown::render(report)),
    ]
}

/// How many verdicts of each kind, in vocabulary order; `interrupted` only in a run gauntlet
/// was stopped in.
pub fn tally(verdicts: &[Verdict]) -> Vec<(VerdictKind, usize)> {
    let count = |kind| (kind, verdicts.iter().filter(|verdict| verdict.kind == kind).count());
    let kinds = [
        VerdictKind::Identical,
        VerdictKind::Conformant,
        VerdictKind::Nonconformant,
        VerdictKind::Error,
        VerdictKind::Skipped,
    ];
    let interrupted = Some(count(VerdictKind::Interrupted)).filter(|(_, n)| *n > 0);
    kinds.map(count).into_iter().chain(interrupted).collect()
}

/// The summary line: how many scenarios, of each verdict, and the time they took.
pub fn counts(verdicts: &[Verdict]) -> String {
    let total: u128 = verdicts.iter().map(|verdict| verdict.elapsed_ms).sum();
    let kinds: Vec<String> = tally(verdicts).iter().map(|(kind, count)| format!("{count} {}", kind.as_str())).collect();
    format!("{} scenarios: {} ({total} ms)\n", verdicts.len(), kinds.join(", "))
}

/// Every finding of every verdict that is not identical, for the text after the table.
pub fn findings(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for verdict in verdicts.iter().filter(|verdict| !verdict.findings.is_empty()) {
        out.push_str(&format!("\n{} ({}):\n", verdict.scenario, verdict.kind.as_str()));
        for finding in &verdict.findings {
            let text = finding.to_string().replace('\n', "\n    ");
            out.push_str(&format!("  {text}\n"));
        }
    }
    out
}

/// The text after a check's tables: the findings of failing scenarios, the known failures,
/// stale expectations, warnings, and where the run happened and its reports went.
pub fn check_summary(run: &CheckRun, expectations: Option<&Path>, dir: &Path) -> String {
    let expectations =
        expectations.map_or_else(|| "no expectations file".to_owned(), |path| path.display().to_string());
    let mut out = String::new();
    let failing = run.failing();
    let failing_verdicts: Vec<_> =
        run.verdicts().into_iter().filter(|verdict| failing.contains(&verdict.scenario.as_str())).collect();
    out.push_str(&findings(&failing_verdicts));
    if !run.comparison.expected.is_empty() {
        out.push_str(&format!("\n{} known failures (listed in {}):\n", run.comparison.expected.len(), expectations));
        for failure in &run.comparison.expected {
            out.push_str(&format!("  {} {}\n", failure.scenario, failure.requirement.as_deref().unwrap_or("(any)")));
        }
    }
    for failure in &run.comparison.unexpected {
        out.push_str(&format!(
            "\nunexpected failure: {} {}: {}\n",
            failure.scenario,
            failure.headline(),
            failure.message
        ));
    }
    for stale in &run.comparison.stale {
        out.push_str(&format!(
            "\nstale expectation: {} {} {}; remove it from {}\n",
            stale.entry.scenario,
            stale.entry.requirement.as_deref().unwrap_or("(any)"),
            stale.why.describe(),
            expectations
        ));
    }
    for warning in &run.warnings {
        out.push_str(&format!("\nwarning: {warning}\n"));
    }
    let network = if run.isolated { "loopback-only network namespace" } else { "host network" };
    out.push_str(&format!("\n{} checked on the {network}; reports in {}\n", run.implementation, dir.display()));
    out
}
