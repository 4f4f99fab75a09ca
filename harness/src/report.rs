//! Reports over verdicts. Only verdicts and check runs come in; nothing here runs anything.
//!
//! - [`table`] and [`findings`]: the terminal summary of `gauntlet run` and `gauntlet check`.
//! - [`requirements`]: per-requirement results, as text and as a Markdown matrix.
//! - [`junit`]: JUnit XML for CI systems.

pub mod junit;
pub mod requirements;

use crate::verdict::{Verdict, VerdictKind};

/// The summary table printed by `gauntlet run`: scenario, terminal states, verdict, time.
pub fn table(verdicts: &[Verdict]) -> String {
    let rows: Vec<[String; 4]> = verdicts
        .iter()
        .map(|verdict| {
            let states =
                if verdict.terminal_states.is_empty() { "-".to_owned() } else { verdict.terminal_states.join(", ") };
            [verdict.scenario.clone(), states, verdict.kind.as_str().to_owned(), format!("{} ms", verdict.elapsed_ms)]
        })
        .collect();
    let header = ["scenario", "terminal states", "verdict", "time"].map(str::to_owned);
    let mut widths = header.clone().map(|cell| cell.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 4]| {
        let cells: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        format!("{}\n", cells.join("  ").trim_end())
    };
    let mut out = line(&header);
    out.push_str(&line(&widths.map(|width| "-".repeat(width))));
    for row in &rows {
        out.push_str(&line(row));
    }
    let count = |kind| verdicts.iter().filter(|verdict| verdict.kind == kind).count();
    let total: u128 = verdicts.iter().map(|verdict| verdict.elapsed_ms).sum();
    out.push_str(&format!(
        "\n{} scenarios: {} identical, {} conformant, {} nonconformant, {} error, {} skipped ({total} ms)\n",
        verdicts.len(),
        count(VerdictKind::Identical),
        count(VerdictKind::Conformant),
        count(VerdictKind::Nonconformant),
        count(VerdictKind::Error),
        count(VerdictKind::Skipped),
    ));
    out
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
