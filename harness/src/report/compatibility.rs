//! One page for every checked implementation against every requirement, from their
//! `report.json` files (`gauntlet compatibility`): docs/compatibility.md.

use std::fmt::Write as _;

use serde_json::Value;

/// A `report.json` that is not a check's report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: not a gauntlet check report (no `implementation` or `requirements`)")]
pub struct NotAReport {
    /// Where it was read from.
    pub what: String,
}

/// The Markdown page: one row per requirement (in the first report's order, which is the
/// registry's), one column per implementation, each cell its result there.
pub fn render(reports: &[(String, Value)]) -> Result<String, NotAReport> {
    let mut columns = Vec::new();
    for (what, report) in reports {
        let name = report.get("implementation").and_then(Value::as_str);
        let rows = report.get("requirements").and_then(Value::as_array);
        let (Some(name), Some(rows)) = (name, rows) else { return Err(NotAReport { what: what.clone() }) };
        let version = report.get("version").and_then(Value::as_str).unwrap_or("");
        columns.push((name, version, rows));
    }
    let mut out = String::from("# Compatibility\n\n");
    out.push_str("Every checked implementation against every requirement of docs/contract.md, from the `report.json` of its last `gauntlet check` (regenerate with `scripts/reports`). `FAIL` breaks the requirement in at least one scenario (its report quotes the evidence); `differs` is a MAY, the reference's own choice, which never fails a verdict; `not judged` had no evidence in the run (a Log the implementation does not keep, scenarios it skipped or could not finish).\n\n");
    for (name, version, _) in &columns {
        let _ = writeln!(out, "- [{name}](reports/{name}.md): `{version}`");
    }
    out.push_str("\n| requirement | tier |");
    for (name, _, _) in &columns {
        let _ = write!(out, " {name} |");
    }
    out.push_str("\n| --- | --- |");
    out.push_str(&" --- |".repeat(columns.len()));
    out.push('\n');
    let Some((_, _, first)) = columns.first() else { return Ok(out) };
    for row in first.iter() {
        let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
        let tier = row.get("tier").and_then(Value::as_str).unwrap_or_default();
        let _ = write!(out, "| {id} | {tier} |");
        for (_, _, rows) in &columns {
            let status = rows
                .iter()
                .find(|row| row.get("id").and_then(Value::as_str) == Some(id))
                .and_then(|row| row.get("status").and_then(Value::as_str))
                .unwrap_or("-");
            let _ = write!(out, " {status} |");
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_requirement_is_a_row_and_each_implementation_a_column() {
        let report = |name: &str, status: &str| {
            json!({"implementation": name, "version": "1", "requirements": [
                {"id": "ACP-STOP-REASON", "tier": "MUST", "status": status},
                {"id": "ACP-ERROR-DATA", "tier": "MAY", "status": "differs"},
            ]})
        };
        let page = render(&[("a.json".into(), report("a", "pass")), ("b.json".into(), report("b", "FAIL"))]).unwrap();
        assert!(page.contains("| requirement | tier | a | b |\n| --- | --- | --- | --- |\n"), "{page}");
        assert!(page.contains("| ACP-STOP-REASON | MUST | pass | FAIL |\n"), "{page}");
        assert!(page.contains("| ACP-ERROR-DATA | MAY | differs | differs |\n"), "{page}");
        assert!(page.contains("- [a](reports/a.md): `1`"), "{page}");
        assert_eq!(render(&[("x.json".into(), json!({}))]), Err(NotAReport { what: "x.json".into() }));
    }
}
