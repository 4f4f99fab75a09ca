//! `gauntlet`: thin glue from flags to [`gauntlet::run`], mapped to exit codes
//! (0 all identical, 1 something is not, 2 gauntlet itself failed).

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use gauntlet::cli::{Cli, Command};
use gauntlet::driver::reference::Reference;
use gauntlet::verdict::VerdictKind;
use gauntlet::{golden, report, run};

fn main() -> ExitCode {
    match dispatch(Cli::parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("gauntlet: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Run { filters, bless } => {
            let plan = cli.plan(*bless);
            let names = run::scenario_names(&plan);
            let selected: Vec<_> = names
                .iter()
                .filter(|(name, _)| filters.is_empty() || filters.iter().any(|filter| name.contains(filter.as_str())))
                .collect();
            anyhow::ensure!(
                !selected.is_empty(),
                "no scenario under {} matches {filters:?}",
                plan.scenarios().display()
            );
            let driver = Reference::default();
            let verdicts: Vec<_> =
                selected.iter().map(|(name, path)| run::run_scenario(&plan, &driver, name, path)).collect();
            print!("{}", report::table(&verdicts));
            print!("{}", report::findings(&verdicts));
            let all_identical = verdicts.iter().all(|verdict| verdict.kind == VerdictKind::Identical);
            Ok(if all_identical { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Accept => {
            let plan = cli.plan(false);
            let accepted = golden::accept(&plan.golden()).context("accepting pending goldens")?;
            for path in &accepted {
                println!("accepted {}", path.display());
            }
            if accepted.is_empty() {
                println!("no pending golden files under {}", plan.golden().display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List => {
            for (name, _) in run::scenario_names(&cli.plan(false)) {
                println!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
