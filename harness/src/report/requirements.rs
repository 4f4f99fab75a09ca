//! Per-requirement results of a check: which requirements an implementation meets, breaks or
//! was not asked about, as a terminal table (the Markdown matrix is `markdown.rs`'s).

use std::fmt::Write as _;

use gauntlet_judge::contract::{Requirement, Tier};
use gauntlet_judge::verdict::{Finding, Layer, Verdict, VerdictKind};

/// What a run says about one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Checked, and held everywhere.
    Pass,
    /// Broken in at least one scenario.
    Fail,
    /// A MAY requirement (the reference's own choice) this implementation does otherwise in at
    /// least one scenario: informative, never a failure.
    Differs,
    /// Its only scenarios were skipped (a capability the implementation lacks).
    Skipped,
    /// No evidence in this run: checked only by the reference runtime's unit tests, by
    /// scenarios not run or that ended in `error` (a crash, a hang, the wrong dialect), or
    /// about a Log the implementation does not keep. Never a pass (issue 11).
    NotJudged,
}

impl Status {
    /// The report word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Differs => "differs",
            Status::Skipped => "skipped",
            Status::NotJudged => "not judged",
        }
    }
}

/// One requirement's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The requirement id.
    pub id: String,
    /// Its tier.
    pub tier: Tier,
    /// The text it comes from (docs/contract.md's "source" column).
    pub source: String,
    /// The result.
    pub status: Status,
    /// The scenarios that broke it.
    pub failing: Vec<String>,
    /// What shows it broken: per failing scenario, the first line of the first finding that
    /// names it.
    pub evidence: Vec<(String, String)>,
}

/// Requirements about the gauntlet Log itself: an implementation that keeps none cannot break
/// them, so they are not judged for it (they pass vacuously otherwise). Subagent and Workflow
/// evidence lives in the parent's Log too, except what ACP shows of it.
fn about_the_log(id: &str) -> bool {
    let delegation = (id.starts_with("SUB-") || id.starts_with("WF-")) && !id.contains("-ACP-");
    id.starts_with("LOG-") || id.starts_with("TURN-") || id == "REPLAY-AUDIT-ONLY" || delegation
}

/// Judges each requirement from the verdicts: it fails where a finding names it, or where a
/// scenario that checks it misses what the scenario file states (an expectation). `logged`
/// says whether the implementation keeps a gauntlet Log.
pub fn rows(requirements: &[Requirement], verdicts: &[Verdict], logged: bool) -> Vec<Row> {
    // Only a scenario that ran to a judgement is evidence: a skipped one was not played, and
    // an `error` one (a crash, a hang, an agent on the wrong dialect) proves nothing either way.
    let ran = |verdict: &&Verdict| {
        !matches!(verdict.kind, VerdictKind::Skipped | VerdictKind::Error | VerdictKind::Interrupted)
    };
    let skipped = |verdict: &&Verdict| verdict.kind == VerdictKind::Skipped;
    // A scenario that missed what its file states without naming a requirement (an unnamed
    // expectation) charges no row, and vouches for none either.
    let unnamed = |finding: &Finding| finding.layer == Layer::Expectation && finding.requirement.is_none();
    let judged = |verdict: &&Verdict| ran(verdict) && !verdict.findings.iter().any(unnamed);
    requirements
        .iter()
        .map(|requirement| {
            let scenarios: Vec<&str> =
                requirement.checked_by.iter().filter_map(|check| check.strip_prefix("scenario:")).collect();
            let by_invariant = requirement.checked_by.iter().any(|check| check.starts_with("invariant:"));
            let mut failing: Vec<String> = verdicts
                .iter()
                .filter(|verdict| {
                    // A finding counts against the requirement it names only: an expectation that
                    // names none (a terminal state the scenario states) is its scenario's, and
                    // charging it to every row the scenario covers made Log-only rows FAIL for
                    // an agent without a Log (issue 31).
                    verdict.findings.iter().any(|finding| finding.evidence_for(&requirement.id).is_some())
                })
                .map(|verdict| verdict.scenario.clone())
                .collect();
            failing.dedup();
            let evidence = failing
                .iter()
                .filter_map(|scenario| {
                    let verdict = verdicts.iter().find(|verdict| &verdict.scenario == scenario)?;
                    let message = verdict.findings.iter().find_map(|finding| finding.evidence_for(&requirement.id))?;
                    Some((scenario.clone(), message.lines().next().unwrap_or_default().to_owned()))
                })
                .collect();
            let related: Vec<&Verdict> = verdicts
                .iter()
                .filter(|verdict| by_invariant || scenarios.contains(&verdict.scenario.as_str()))
                .collect();
            let named: Vec<&Verdict> =
                verdicts.iter().filter(|verdict| scenarios.contains(&verdict.scenario.as_str())).collect();
            let status = if !failing.is_empty() && requirement.tier == Tier::May {
                Status::Differs
            } else if !failing.is_empty() {
                Status::Fail
            } else if !logged && about_the_log(&requirement.id) {
                Status::NotJudged
            } else if !scenarios.is_empty() && named.is_empty() {
                // The scenarios written for it were not in this run (a filter): its invariants
                // held only where nothing exercised it.
                Status::NotJudged
            } else if !named.is_empty() && named.iter().all(skipped) {
                // Every scenario written for it was skipped: its invariants held only vacuously.
                Status::Skipped
            } else if !named.is_empty() && !named.iter().any(judged) {
                // Its scenarios were played but ended in error, or missed what they state
                // without naming it: no evidence.
                Status::NotJudged
            } else if related.iter().any(judged) {
                Status::Pass
            } else if !related.is_empty() && related.iter().all(skipped) {
                Status::Skipped
            } else {
                Status::NotJudged
            };
            Row {
                id: requirement.id.clone(),
                tier: requirement.tier,
                source: requirement.source.clone(),
                status,
                failing,
                evidence,
            }
        })
        .collect()
}

/// The terminal table: requirement, tier, result, failing scenarios.
pub fn text(rows: &[Row]) -> String {
    let width = rows.iter().map(|row| row.id.len()).max().unwrap_or(0).max("requirement".len());
    let mut out = format!("{:<width$}  {:<6}  {:<10}  failing scenarios\n", "requirement", "tier", "result");
    for row in rows {
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:<10}  {}",
            row.id,
            row.tier.as_str(),
            row.status.as_str(),
            row.failing.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(id: &str, checked_by: &[&str]) -> Requirement {
        Requirement {
            id: id.into(),
            tier: Tier::Must,
            source: "seed 000".into(),
            checked_by: checked_by.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn each_requirement_gets_a_result_from_the_verdicts() {
        let requirements = [
            requirement("A", &["invariant:a"]),
            requirement("B", &["scenario:s2"]),
            requirement("C", &["scenario:s3"]),
            requirement("D", &["test:x.rs"]),
        ];
        let verdicts = [
            Verdict::from_findings("s1", vec![], vec![Finding::new(Layer::Invariant, Some("A"), "bad")]),
            Verdict::from_findings("s2", vec![], vec![]),
            Verdict::skipped("s3", "lacks cancel".into()),
        ];
        let rows = rows(&requirements, &verdicts, true);
        let statuses: Vec<Status> = rows.iter().map(|row| row.status).collect();
        assert_eq!(statuses, [Status::Fail, Status::Pass, Status::Skipped, Status::NotJudged]);
        assert_eq!(rows[0].failing, ["s1"]);
    }

    #[test]
    fn an_expectation_counts_against_its_own_requirement_only() {
        let requirements = [requirement("MUST-A", &["scenario:s1"]), requirement("MAY-B", &["scenario:s1"])];
        let named = Verdict::from_findings("s1", vec![], vec![Finding::new(Layer::Expectation, Some("MAY-B"), "none")]);
        let statuses = |verdict: Verdict| -> Vec<Status> {
            rows(&requirements, &[verdict], true).iter().map(|row| row.status).collect()
        };
        assert_eq!(statuses(named), [Status::Pass, Status::Fail]);
        let unnamed = Verdict::from_findings("s1", vec![], vec![Finding::new(Layer::Expectation, None, "ended wrong")]);
        // One that names none charges no row and vouches for none (issue 31).
        assert_eq!(statuses(unnamed), [Status::NotJudged, Status::NotJudged]);
    }

    #[test]
    fn an_invariant_that_held_only_where_its_scenarios_were_skipped_is_not_a_pass() {
        let requirements = [requirement("SUB", &["invariant:sub", "scenario:s3"])];
        let verdicts = [Verdict::from_findings("s1", vec![], vec![]), Verdict::skipped("s3", "lacks subagents".into())];
        assert_eq!(rows(&requirements, &verdicts, true)[0].status, Status::Skipped);
    }

    /// An agent on the wrong dialect: every scenario is `error`. Only what a finding names
    /// fails; nothing passes and nothing is called skipped, everything else is not judged.
    #[test]
    fn a_run_whose_scenarios_all_errored_judges_nothing_as_pass() {
        let requirements = [
            requirement("WIRE", &["invariant:wire"]),
            requirement("STOP", &["invariant:stop", "scenario:s2"]),
            requirement("MOCK", &["invariant:mock"]),
        ];
        let wrong_dialect = |name: &str| {
            let finding = Finding::new(Layer::Invariant, Some("MOCK"), "the agent called POST /v1/messages");
            let mut verdict = Verdict::from_findings(name, vec![], vec![finding]);
            verdict.kind = VerdictKind::Error;
            verdict
        };
        let verdicts = [wrong_dialect("s1"), wrong_dialect("s2")];
        let statuses: Vec<Status> = rows(&requirements, &verdicts, true).iter().map(|row| row.status).collect();
        assert_eq!(statuses, [Status::NotJudged, Status::NotJudged, Status::Fail]);
        let with_a_pass = [wrong_dialect("s1"), Verdict::from_findings("s3", vec![], vec![])];
        let statuses: Vec<Status> = rows(&requirements, &with_a_pass, true).iter().map(|row| row.status).collect();
        // STOP's own scenario `s2` was not in the run: its invariant held only vacuously.
        assert_eq!(statuses, [Status::Pass, Status::NotJudged, Status::Fail]);
    }
}
