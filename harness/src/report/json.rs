//! The JSON report of a check: the whole run, every finding with its evidence, and each
//! requirement's result, canonical (sorted keys) so two runs diff cleanly and
//! `gauntlet compatibility` can read several of them into one page.

use serde_json::{Value, json};

use super::CheckReport;
use super::requirements::tier;

/// The run and its requirement results as pretty canonical JSON.
pub fn render(report: &CheckReport<'_>) -> String {
    let mut value = serde_json::to_value(report.run).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        let rows: Vec<Value> = report
            .rows
            .iter()
            .map(|row| {
                json!({
                    "id": row.id,
                    "tier": tier(row.tier),
                    "source": row.source,
                    "status": row.status.as_str(),
                    "failing": row.failing,
                    "evidence": row.evidence.iter().map(|(scenario, line)| json!({"scenario": scenario, "finding": line})).collect::<Vec<_>>(),
                })
            })
            .collect();
        fields.insert("requirements".to_owned(), Value::Array(rows));
    }
    gauntlet_agent::canonical::to_string_pretty(&value)
}
