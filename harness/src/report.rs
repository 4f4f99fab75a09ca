//! Reports over verdicts. Only verdicts and check runs come in; nothing here runs anything.
//!
//! - [`counts`] and [`findings`]: the summary of `gauntlet run` and `gauntlet check`, after
//!   the verdict lines of [`progress`].
//! - [`requirements`]: per-requirement results, as text and as a Markdown matrix.
//! - [`junit`]: JUnit XML for CI systems.
//! - [`progress`]: verdicts printed as they finish, as lines or JSON.

pub mod junit;
pub mod progress;
pub mod requirements;

use crate::verdict::{Verdict, VerdictKind};

/// How many verdicts of each kind, in vocabulary order.
pub fn tally(verdicts: &[Verdict]) -> [(VerdictKind, usize); 5] {
    [
        VerdictKind::Identical,
        VerdictKind::Conformant,
        VerdictKind::Nonconformant,
        VerdictKind::Error,
        VerdictKind::Skipped,
    ]
    .map(|kind| (kind, verdicts.iter().filter(|verdict| verdict.kind == kind).count()))
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
