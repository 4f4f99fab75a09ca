//! The JSON report of a check: the whole run, every finding with its evidence, canonical
//! (sorted keys) so two runs diff cleanly.

use super::CheckReport;

/// The run as pretty canonical JSON.
pub fn render(report: &CheckReport<'_>) -> String {
    gauntlet_agent::canonical::to_string_pretty(report.run)
}
