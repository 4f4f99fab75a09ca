//! `gauntlet compatibility`: one page of every checked implementation against every
//! requirement, from their `report.json` files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gauntlet::report::compatibility;

/// Reads each report and prints the page, or writes it to `write`.
pub fn compatibility(reports: &[PathBuf], write: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut read = Vec::new();
    for path in reports {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
        read.push((path.display().to_string(), value));
    }
    let page = compatibility::render(&read)?;
    match write {
        Some(path) => std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?,
        None => print!("{page}"),
    }
    Ok(ExitCode::SUCCESS)
}
