//! `gauntlet`: thin glue from flags to [`gauntlet::run`], mapped to exit codes
//! (0 all identical, 1 something is not, 2 gauntlet itself failed).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use gauntlet::check::{self, CheckRun};
use gauntlet::cli::{Cli, Command};
use gauntlet::driver::reference::Reference;
use gauntlet::lifecycle::Family;
use gauntlet::lifecycle::adapter::Adapter;
use gauntlet::profile::{self, Network};
use gauntlet::verdict::VerdictKind;
use gauntlet::{contract, golden, isolation, known_failures, report, run};

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
            let plan = cli.plan(*bless)?;
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
        Command::Check {
            implementation,
            adapter,
            family,
            deadline_ms,
            filters,
            expectations,
            update_expectations,
            report_dir,
            markdown,
            no_isolation,
        } => {
            let plan = cli.plan(false)?;
            let mut progress =
                |idx: usize, total: usize, name: &str, verdict: Option<&gauntlet::verdict::Verdict>| match verdict {
                    None => eprint!("[{}/{total}] {name} ... ", idx + 1),
                    Some(verdict) => eprintln!("{} ({} ms)", verdict.kind.as_str(), verdict.elapsed_ms),
                };
            let isolate = |name: &str, wanted: bool| {
                wanted
                    && match isolation::enter_loopback_only() {
                        Ok(()) => true,
                        Err(why) => {
                            eprintln!("gauntlet: warning: {why}; {name} runs on the host network");
                            false
                        }
                    }
            };
            // What was checked: the run, its expectations file, the lifecycle family its report
            // is about (none for an agent), whether it keeps a gauntlet Log, and its report folder.
            let (run, expectations, known, about, logged, default_dir) = match (implementation, adapter, family) {
                (Some(implementation), _, _) => {
                    let profile = profile::load(implementation)?;
                    let isolated = isolate(&profile.name, profile.network == Network::Loopback && !no_isolation);
                    let expectations = expectations.clone().unwrap_or_else(|| known_failures::path_for(implementation));
                    let known = known_failures::load(&expectations)?;
                    let run = check::check(&plan, &profile, &known, filters, isolated, &mut progress);
                    let dir = plan.root.join("target/gauntlet").join(&profile.name);
                    (run, Some(expectations), known, None, profile.log.is_some(), dir)
                }
                (None, Some(command), Some(family)) => {
                    let isolated = isolate("the adapter", !no_isolation);
                    let known = match expectations {
                        Some(path) => known_failures::load(path)?,
                        None => known_failures::KnownFailures::default(),
                    };
                    let mut adapter = Adapter::new(command);
                    adapter.deadline = Duration::from_millis(*deadline_ms);
                    let run = check::check_adapter(&plan, &adapter, *family, &known, filters, isolated, &mut progress);
                    anyhow::ensure!(!run.scenarios.is_empty(), "no {} scenario matches {filters:?}", family.as_str());
                    let dir = plan.root.join("target/gauntlet").join(format!("adapter-{}", family.as_str()));
                    (run, expectations.clone(), known, Some(*family), true, dir)
                }
                _ => anyhow::bail!("check needs --impl PROFILE, or --adapter CMD with --family"),
            };
            let registry =
                std::fs::read_to_string(plan.root.join("docs/contract.md")).context("reading docs/contract.md")?;
            let mut requirements = contract::parse(&registry).map_err(anyhow::Error::msg)?;
            requirements.retain(|requirement| Family::of_requirement(&requirement.id) == about);
            let verdicts = run.verdicts();
            let rows = report::requirements::rows(&requirements, &verdicts, logged);
            let dir = report_dir.clone().unwrap_or(default_dir);
            let markdown_text =
                report::requirements::markdown(&run.implementation, run.version.as_deref(), &rows, &verdicts);
            write_reports(&dir, &run, &markdown_text)?;
            if let Some(path) = markdown {
                let parent = path.parent().filter(|parent| !parent.as_os_str().is_empty());
                parent
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .with_context(|| format!("creating {}", path.display()))?;
                std::fs::write(path, &markdown_text).with_context(|| format!("writing {}", path.display()))?;
            }
            if *update_expectations {
                let expectations =
                    expectations.as_ref().context("--update-expectations with --adapter needs --expectations FILE")?;
                let updated = known.updated(&known_failures::failures(&verdicts));
                std::fs::write(expectations, updated.to_toml(&run.implementation))
                    .with_context(|| format!("writing {}", expectations.display()))?;
                println!(
                    "wrote {} ({} known failures): review every reason",
                    expectations.display(),
                    updated.failures.len()
                );
            }
            print!("{}", report::table(&verdicts));
            print!("\n{}", report::requirements::text(&rows));
            print!("{}", summary(&run, expectations.as_deref(), &dir));
            let (passed, failed) = run.counts();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 || *update_expectations { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Accept => {
            let plan = cli.plan(false)?;
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
            for (name, _) in run::scenario_names(&cli.plan(false)?) {
                println!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes `report.json`, `junit.xml` and `report.md` into `dir`.
fn write_reports(dir: &std::path::Path, run: &CheckRun, markdown: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = gauntlet_runtime::canonical::to_string_pretty(run);
    for (name, text) in
        [("report.json", json), ("junit.xml", report::junit::junit(run)), ("report.md", markdown.to_owned())]
    {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The findings of failing scenarios, the known failures and stale expectations.
fn summary(run: &CheckRun, expectations: Option<&std::path::Path>, dir: &std::path::Path) -> String {
    let expectations =
        expectations.map_or_else(|| "no expectations file".to_owned(), |path| path.display().to_string());
    let mut out = String::new();
    let failing = run.failing();
    let failing_verdicts: Vec<_> =
        run.verdicts().into_iter().filter(|verdict| failing.contains(&verdict.scenario.as_str())).collect();
    out.push_str(&report::findings(&failing_verdicts));
    if !run.comparison.expected.is_empty() {
        out.push_str(&format!("\n{} known failures (listed in {}):\n", run.comparison.expected.len(), expectations));
        for failure in &run.comparison.expected {
            out.push_str(&format!("  {} {}\n", failure.scenario, failure.requirement.as_deref().unwrap_or("(any)")));
        }
    }
    for failure in &run.comparison.unexpected {
        out.push_str(&format!(
            "\nunexpected failure: {} {}: {}\n",
            failure.scenario,
            failure.requirement.as_deref().unwrap_or("(fault or expectation)"),
            failure.message
        ));
    }
    for known in &run.comparison.stale {
        out.push_str(&format!(
            "\nstale expectation: {} {} passes now; remove it from {}\n",
            known.scenario,
            known.requirement.as_deref().unwrap_or("(any)"),
            expectations
        ));
    }
    let network = if run.isolated { "loopback-only network namespace" } else { "host network" };
    out.push_str(&format!("\n{} checked on the {network}; reports in {}\n", run.implementation, dir.display()));
    out
}
