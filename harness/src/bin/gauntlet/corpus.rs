//! `gauntlet accept` and `gauntlet list`: the corpus's files, read or renamed.

use std::process::ExitCode;

use anyhow::Context;
use gauntlet::cli::Cli;
use gauntlet::{golden, run};

/// Renames every pending `<file>.new` golden over its golden.
pub fn accept(cli: &Cli) -> anyhow::Result<ExitCode> {
    let plan = cli.plan(false)?;
    let accepted = golden::accept(&plan.golden()).context("accepting pending goldens")?;
    for path in &accepted {
        println!("accepted {}", path.strip_prefix(&plan.root).unwrap_or(path).display());
    }
    if accepted.is_empty() {
        println!("no pending golden files under {}", plan.golden().display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints every scenario name.
pub fn list(cli: &Cli) -> anyhow::Result<ExitCode> {
    for (name, _) in run::scenario_names(&cli.plan(false)?) {
        println!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}
