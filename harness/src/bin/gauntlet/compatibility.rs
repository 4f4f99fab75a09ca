//! `gauntlet compatibility`: one page of every checked implementation against every
//! requirement, from their `report.json` files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gauntlet::check;
use gauntlet::cli::Cli;
use gauntlet::report::compatibility::{self, Read};
use gauntlet::report::coverage::{self, Coverage};

/// Reads each report and prints the page, or writes it to `write`; a report is read against
/// the corpus, so a scenario added since it was made shows as not checked yet.
pub fn compatibility(cli: &Cli, reports: &[PathBuf], write: Option<&Path>) -> anyhow::Result<ExitCode> {
    let plan = crate::corpus::plan(cli, false)?;
    let mut reads = Vec::new();
    for path in reports {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let report = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
        let played = compatibility::scenarios_played(&report);
        let corpus = check::scenarios_of(&plan, coverage::family_of(&played));
        let not_checked_yet = Coverage::of(&played, &corpus).not_checked_yet;
        reads.push(Read { what: path.display().to_string(), report, not_checked_yet });
    }
    let page = compatibility::render(&reads)?;
    match write {
        Some(path) => std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?,
        None => print!("{page}"),
    }
    Ok(ExitCode::SUCCESS)
}
