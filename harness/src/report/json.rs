//! The JSON report of a check: the whole run, every finding with its evidence, and each
//! requirement's result, canonical (sorted keys) so two runs diff cleanly and
//! `gauntlet compatibility` and `gauntlet merge` can read several of them. Its JSON Schema is
//! `docs/schema/report.schema.json`, generated from [`Report`].

use serde::Serialize;

use super::CheckReport;
use crate::check::CheckRun;

/// `report.json`: the run, and each requirement's result beside it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Report<'a> {
    /// The run: its scenarios with their verdicts and evidence, the comparison with the
    /// expectations file, and the warnings.
    #[serde(flatten)]
    pub run: &'a CheckRun,
    /// Per requirement of the contract the check judged, its result.
    pub requirements: Vec<Row>,
}

/// One requirement's result.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Row {
    /// The requirement id (docs/contract.md).
    pub id: String,
    /// `MUST`, `SHOULD` or `MAY`.
    pub tier: &'static str,
    /// The text it comes from.
    pub source: String,
    /// `pass`, `FAIL`, `differs`, `skipped` or `not judged`.
    pub status: &'static str,
    /// The scenarios that broke it.
    pub failing: Vec<String>,
    /// Per failing scenario, the first line of the finding that names it.
    pub evidence: Vec<Evidence>,
}

/// What shows a requirement broken in one scenario.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Evidence {
    /// The scenario.
    pub scenario: String,
    /// The first line of its finding.
    pub finding: String,
}

/// The run and its requirement results as pretty canonical JSON.
pub fn render(report: &CheckReport<'_>) -> String {
    let rows = report
        .rows
        .iter()
        .map(|row| Row {
            id: row.id.clone(),
            tier: row.tier.as_str(),
            source: row.source.clone(),
            status: row.status.as_str(),
            failing: row.failing.clone(),
            evidence: row
                .evidence
                .iter()
                .map(|(scenario, finding)| Evidence { scenario: scenario.clone(), finding: finding.clone() })
                .collect(),
        })
        .collect();
    let value = serde_json::to_value(Report { run: report.run, requirements: rows }).unwrap_or(serde_json::Value::Null);
    gauntlet_agent::canonical::to_string_pretty(&value)
}
