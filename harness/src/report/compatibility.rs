//! One page for every checked implementation against every requirement, from their
//! `report.json` files (`gauntlet compatibility`): docs/compatibility.md. Scenarios added to the
//! corpus since a report was made are listed as not checked yet, never counted as anything.

use std::fmt::Write as _;

use serde_json::Value;

/// A `report.json` that is not a check's report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: not a gauntlet check report (no `implementation` or `requirements`)")]
pub struct NotAReport {
    /// Where it was read from.
    pub what: String,
}

/// One implementation's `report.json` as read, and the scenarios of today's corpus its run
/// never played.
#[derive(Debug, Clone)]
pub struct Read {
    /// Where it was read from.
    pub what: String,
    /// The report.
    pub report: Value,
    /// Scenarios of the corpus it never played ([`super::coverage`]): not checked yet.
    pub not_checked_yet: Vec<String>,
}

/// The scenarios a `report.json` holds a verdict for, in its order.
pub fn scenarios_played(report: &Value) -> Vec<String> {
    let scenarios = report.get("scenarios").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    scenarios.iter().filter_map(|checked| checked["verdict"]["scenario"].as_str().map(str::to_owned)).collect()
}

/// The Markdown page: one row per requirement (in the first report's order, which is the
/// registry's), one column per implementation, each cell its result there; then the scenarios
/// each has not been checked on yet.
pub fn render(reads: &[Read]) -> Result<String, NotAReport> {
    let mut columns = Vec::new();
    for Read { what, report, .. } in reads {
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
    for row in *first {
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
    let names = columns.iter().map(|(name, _, _)| *name);
    not_checked_yet(&mut out, names.zip(reads.iter().map(|read| read.not_checked_yet.as_slice())));
    Ok(out)
}

/// The section naming, per implementation, the scenarios of the corpus its last check did not
/// play; none when every one played them all.
fn not_checked_yet<'a>(out: &mut String, columns: impl Iterator<Item = (&'a str, &'a [String])>) {
    let lines: Vec<String> = columns
        .filter(|(_, names)| !names.is_empty())
        .map(|(name, names)| {
            let names: Vec<String> = names.iter().map(|scenario| format!("`{scenario}`")).collect();
            format!("- {name}: {}\n", names.join(", "))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    out.push_str("\n## Not checked yet\n\nScenarios of the corpus an implementation's last check did not play (added since, or left out by its filters): the table above counts nothing of them until it is checked on them.\n\n");
    out.extend(lines);
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
        let read = |what: &str, report: Value, not_checked_yet: &[&str]| Read {
            what: what.into(),
            report,
            not_checked_yet: not_checked_yet.iter().map(|name| (*name).to_owned()).collect(),
        };
        let page =
            render(&[read("a.json", report("a", "pass"), &[]), read("b.json", report("b", "FAIL"), &["turn/new"])])
                .unwrap();
        assert!(page.contains("| requirement | tier | a | b |\n| --- | --- | --- | --- |\n"), "{page}");
        assert!(page.contains("| ACP-STOP-REASON | MUST | pass | FAIL |\n"), "{page}");
        assert!(page.contains("| ACP-ERROR-DATA | MAY | differs | differs |\n"), "{page}");
        assert!(page.contains("- [a](reports/a.md): `1`"), "{page}");
        assert!(page.ends_with("until it is checked on them.\n\n- b: `turn/new`\n"), "{page}");
        assert!(!render(&[read("a.json", report("a", "pass"), &[])]).unwrap().contains("Not checked yet"));
        assert_eq!(render(&[read("x.json", json!({}), &[])]), Err(NotAReport { what: "x.json".into() }));
    }
}
